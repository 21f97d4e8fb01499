import BlobStream
import Foundation
internal import HTTP1
import Synchronization

/// One S3 request before it is signed.
struct S3Call {
    /// The S3 operation, for errors (`UploadPart`).
    var operation: String
    var method: String
    var key: String
    var query: [(String, String)] = []
    /// Fields to send and sign (`x-amz-*`, `Content-Type`).
    var fields: [(String, String)] = []
    var uploadID: String?
    var partNumber: Int?
    /// Whether sending it twice makes two resources (`CreateMultipartUpload`): such a call
    /// never goes out on a kept-alive connection.
    var createsResource = false
    /// Whether S3 may take minutes to answer (`CompleteMultipartUpload`, which assembles the
    /// object): its answer gets ``S3Configuration/completeTimeout`` instead of ``S3Configuration/timeout``.
    var answersSlowly = false
}

/// S3's answer: status, head fields, body (error bodies and XML results are small).
struct S3Answer {
    var head: HTTPResponseHead
    var body: Data
    var statusCode: Int { head.statusCode }
}

/// Signs S3 requests and sends them over the package's HTTP/1.1 client, with a pool of
/// kept-alive connections (one per part in flight). Blocking: it runs on the upload's worker
/// threads, never on Swift's cooperative pool.
///
/// Redirects: one to the very same URL (path and query) is followed, signed anew, at most
/// twice; one to another path or query within the origin is refused as a protocol violation
/// of S3 (``BlobUploadError/protocolViolation(operation:url:reason:)``) naming its target (it would store the blob under another key or turn `UploadPart` into
/// `PutObject`); one to another origin is refused
/// (``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)``): the `Authorization`
/// field and the body are never sent to another host.
final class S3Wire: Sendable {
    let bucket: String
    let signer: SigV4Signer
    private let scheme: String
    private let host: String
    private let port: Int
    private let addressing: S3Configuration.Addressing
    private let timeout: TimeInterval
    private let completeTimeout: TimeInterval
    private let minimumSpeed: MinimumSpeed
    private let rateLimit: RateLimit?
    /// Where connections go: the endpoint's host and port, with TLS for `https:`.
    private let endpoint: HTTP1Endpoint
    private let trust: TLSConfiguration
    /// Kept-alive connections: as many as parts can be in flight.
    private let idle = HTTP1ConnectionPool(limit: 64)

    /// `scheme://host:port` of the endpoint, naming where uploads go (an upload journal's key).
    var origin: String { "\(scheme)://\(host):\(port)" }

    /// Error bodies and XML results are kept up to this size; an answer with a longer body is a
    /// protocol violation (no S3 answer this client asks for comes near it).
    static let maxKeptBody = 4 << 20

    /// A wire for `configuration`.
    /// - Throws: ``S3Error/unsupportedEndpoint(endpoint:reason:)`` for an endpoint that is not
    ///   `http(s)://host[:port]`, ``S3Error/invalidConfiguration(name:reason:)`` for a bucket name
    ///   S3 cannot have.
    init(configuration: S3Configuration) throws(S3Error) {
        let endpoint = configuration.endpoint
        let scheme = endpoint.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https" else {
            throw .unsupportedEndpoint(endpoint: endpoint.absoluteString, reason: "not an http or https URL")
        }
        guard scheme == "http" || TLSTrust.isAvailable else {
            throw .unsupportedEndpoint(
                endpoint: endpoint.absoluteString, reason: "this build has no TLS of its own (it needs Linux and OpenSSL 3)")
        }
        guard let host = endpoint.host?.lowercased(), !host.isEmpty else {
            throw .unsupportedEndpoint(endpoint: endpoint.absoluteString, reason: "the URL names no host")
        }
        let bucket = configuration.bucket
        guard (3...63).contains(bucket.utf8.count),
              bucket.utf8.allSatisfy({ (48...57).contains($0) || (97...122).contains($0) || $0 == 45 || $0 == 46 }) else {
            throw .invalidConfiguration(
                name: "bucket", reason: "\"\(bucket)\" is not an S3 bucket name (3 to 63 lowercase letters, digits, '.', '-')")
        }
        // An IPv6 literal names one host: no bucket can be put in front of it.
        if host.contains(":"), configuration.addressing == .virtualHost {
            throw .unsupportedEndpoint(
                endpoint: endpoint.absoluteString, reason: "virtual-host addressing needs a host name, not an IPv6 address")
        }
        self.bucket = bucket
        self.scheme = scheme
        self.host = host
        self.port = endpoint.port ?? (scheme == "https" ? 443 : 80)
        // Virtual-host requests go to the bucket's own host name: it is what DNS answers for, and
        // what the certificate is verified against (`*.s3.amazonaws.com`).
        let connectHost = configuration.addressing == .virtualHost ? "\(bucket).\(host)" : host
        self.endpoint = HTTP1Endpoint(host: connectHost, port: self.port, isSecure: scheme == "https")
        self.trust = configuration.trust.configuration
        self.addressing = configuration.addressing
        self.timeout = configuration.timeout
        self.completeTimeout = max(configuration.completeTimeout, configuration.timeout)
        self.minimumSpeed = configuration.minimumSpeed
        self.rateLimit = configuration.rateLimit
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        guard URL(string: "\(scheme)://\(authority)/") != nil else {
            throw .unsupportedEndpoint(endpoint: endpoint.absoluteString, reason: "no request URL can be made of its host and port")
        }
    }

    /// `host[:port]` as sent in `Host` and signed (the default port left out; an IPv6 literal
    /// in brackets, as the request head writes it).
    var authority: String {
        let literal = host.contains(":") ? "[\(host)]" : host
        let name = addressing == .virtualHost ? "\(bucket).\(host)" : literal
        return port == (scheme == "https" ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// The request path, percent-encoded.
    private func path(for key: String) -> String {
        let encodedKey = S3URLEncoding.encode(key, keepingSlash: true)
        return addressing == .virtualHost ? "/" + encodedKey : "/\(bucket)/" + encodedKey
    }

    /// The URL of `call`, as sent.
    /// - Throws: ``S3Error/unsupportedEndpoint(endpoint:reason:)`` when none can be made.
    func url(for call: S3Call) throws(S3Error) -> URL {
        let query = S3URLEncoding.canonicalQuery(call.query)
        let text = "\(scheme)://\(authority)\(path(for: call.key))" + (query.isEmpty ? "" : "?" + query)
        guard let url = URL(string: text) else {
            throw .unsupportedEndpoint(endpoint: "\(scheme)://\(authority)", reason: "\(call.operation): \(text) is no URL")
        }
        return url
    }

    /// Signs and sends `call` with `body` (hashed as `payloadHash`), paced by
    /// ``S3Configuration/rateLimit``, `observe` told the bytes written so far after each slice (from 0
    /// again when the body is sent again), and reads
    /// the answer. Statuses are returned, not thrown.
    /// - Throws: ``S3Error/transfer(_:)`` for a network failure, a broken answer or a refused
    ///   redirect; ``S3Error/cancelled(uploadID:)`` when `cancellation` fires.
    func send(
        _ call: S3Call, body: UnsafeRawBufferPointer?, payloadHash: String, cancellation: S3Cancellation,
        observe: (@Sendable (Int) -> Void)? = nil
    ) throws(S3Error) -> S3Answer {
        var url = try url(for: call)
        let meter = HTTP1Meter.body(limitedBy: rateLimit, observing: observe)
        var followed = 0
        while true {
            let answer = try exchange(call, url: url, body: body, payloadHash: payloadHash, meter: meter, cancellation: cancellation)
            let next = HTTPRedirectPolicy.s3.next(
                method: call.method, url: url, hasBody: false, status: answer.head.statusCode,
                location: answer.head["location"], followed: followed)
            switch next {
            case nil:
                return answer
            case .success(let follow):
                url = follow.url
                followed += 1
            case .failure(.otherOrigin(let target, let allowed)):
                throw .transfer(.crossOriginRefused(method: call.method, url: target.absoluteString, allowedOrigin: "\(allowed)"))
            case .failure(let refusal):
                throw .transfer(.protocolViolation(
                    operation: .s3(operation: call.operation), url: refusal.location,
                    reason: "\(call.method) \(url.absoluteString) was \(refusal.reason)"))
            }
        }
    }

    /// The signature of `call` sent to `url`: its path and query as the URL sends them, the
    /// host as the `Host` field names it.
    func sign(_ call: S3Call, url: URL, payloadHash: String, date: Date) -> SigV4Signer.Signed {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        return signer.sign(
            method: call.method, path: components?.percentEncodedPath ?? "/", query: components?.percentEncodedQuery ?? "",
            host: authority, fields: call.fields, payloadHash: payloadHash, date: date)
    }

    private func exchange(
        _ call: S3Call, url: URL, body: UnsafeRawBufferPointer?, payloadHash: String, meter: HTTP1Meter?,
        cancellation: S3Cancellation
    ) throws(S3Error) -> S3Answer {
        let signed = sign(call, url: url, payloadHash: payloadHash, date: Date())
        let head = HTTPRequestHead(method: call.method, url: url, fields: call.fields + signed.fields, contentLength: body?.count ?? 0)
        if let (name, problem) = head.fieldProblem {
            throw .transfer(HeaderFieldCheck.error(name: name, problem: problem))
        }
        let headBytes = head.serialized()
        // A call that makes a resource never goes out on a kept-alive connection, so it is never
        // sent twice; any other is sent again on a new one after a stale kept-alive one.
        let policy = HTTP1ReusePolicy(takesIdle: !call.createsResource, resendsAfterStale: true)
        do throws(HTTP1RequestFailure) {
            return try idle.run(to: endpoint, trust: trust, connectTimeout: timeout, policy: policy, cancellation: cancellation.requests) {
                connection throws(HTTP1Error) in
                let answer = try transmit(on: connection, call: call, head: headBytes, body: body, meter: meter)
                return (S3Answer(head: answer.head, body: Data(answer.body)), answer.reusable)
            }
        } catch {
            if cancellation.isCancelled || error.error == .cancelled { throw .cancelled(uploadID: call.uploadID) }
            throw .transfer(SocketHTTPTransport.uploadError(
                error.error, in: .s3(operation: call.operation), method: call.method, url: url, progress: error.progress, limit: timeout))
        }
    }

    /// Keeps `connection` for a later request, unless it was cancelled (test seam).
    func returnToPool(_ connection: HTTP1Connection) {
        idle.put(connection, for: endpoint, trust: trust)
    }

    /// Writes the request and reads the answer (``HTTP1Connection/exchange(method:head:body:wait:keepingAtMost:failingPastLimit:)``:
    /// an early error answer is read rather than lost in a broken pipe, an early 2xx never
    /// counts for a body not all sent); an answer body past the bound fails the request.
    /// The request goes out at ``S3Configuration/minimumSpeed``; the answer has a deadline
    /// (``S3Configuration/completeTimeout`` for `CompleteMultipartUpload`, whose server sends
    /// whitespace while it assembles, ``S3Configuration/timeout`` for any other).
    private func transmit(
        on connection: HTTP1Connection, call: S3Call, head: [UInt8], body: UnsafeRawBufferPointer?, meter: HTTP1Meter?
    ) throws(HTTP1Error) -> HTTP1Answer {
        let pace = HTTP1Pace(minimumBytesPerSecond: minimumSpeed.bytesPerSecond, seconds: minimumSpeed.seconds, silence: timeout)
        return try connection.exchange(
            method: call.method, head: head, body: body, sending: .pace(pace),
            answerTimeout: call.answersSlowly ? completeTimeout : timeout,
            keepingAtMost: Self.maxKeptBody, failingPastLimit: true, meter: meter)
    }

    /// The error for an answer with an error status (or a 200 whose body is an `<Error>`, as
    /// `CompleteMultipartUpload` may send): `NoSuchUpload` is ``S3Error/uploadGone(bucket:key:uploadID:)``.
    func failure(of answer: S3Answer, for call: S3Call) -> S3Error {
        let parsed = S3Answers.error(answer.body)
        if parsed?.code == "NoSuchUpload", let uploadID = call.uploadID {
            return .uploadGone(bucket: bucket, key: call.key, uploadID: uploadID)
        }
        var message = parsed?.message
        if parsed == nil, !answer.body.isEmpty {
            // Not S3's XML (a proxy's page, a store's text): one line of it, as for tus.
            message = HTTPErrorMessage.message(of: answer.body, contentType: answer.head["content-type"], statusCode: answer.statusCode)
        }
        return .service(S3ServiceError(
            operation: call.operation, statusCode: answer.statusCode, code: parsed?.code, message: message,
            requestID: parsed?.requestID ?? answer.head["x-amz-request-id"], bucket: bucket, key: call.key,
            uploadID: call.uploadID, partNumber: call.partNumber))
    }
}
