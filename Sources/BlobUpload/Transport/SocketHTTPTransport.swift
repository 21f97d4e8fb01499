import Dispatch
import BlobStream
import Foundation
internal import HTTP1
import Synchronization

/// tus requests and streamed PUTs on the package's own HTTP/1.1 client (``HTTP1Connection``,
/// plain or TLS): one kept-alive connection per endpoint, request bodies written with `send`
/// straight from the caller's memory, on the one request loop (keep-alive reuse, one resend of
/// a request that a kept-alive connection lost before any answer).
///
/// Why not URLSession: FoundationNetworking hands a body to libcurl 64 KiB at a time, each
/// time through dispatch sources, timers and queue hops. For a tus upload, whose bodies are
/// buffers already in memory, that costs several times the CPU of the Python client (see the
/// benchmark); here a 4 MiB chunk is one `send` loop.
///
/// Redirects: as ``HTTPReply/redirect(hasBody:followed:)`` says, as on the URLSession transport. Proxies from the environment are not used. Each request runs on a thread of its
/// own, so uploads that share a client run side by side and cancelling one is never held up
/// by another waiting for a slow server; ``send(_:body:)`` returns only once the socket no
/// longer touches `body`, even when cancelled.
final class SocketHTTPTransport: Sendable {
    /// Seconds a connect may take, and a whole answer from the end of its request (a server
    /// that answers one byte at a time cannot stretch it), and the longest silence while a
    /// request is sent.
    let timeout: TimeInterval
    /// The slowest a request (its body) may be sent.
    let minimumSpeed: MinimumSpeed
    /// The certificate authorities an `https:` connection trusts.
    let trust: TLSConfiguration
    /// The most bytes per second request bodies go out at, shared by every request.
    let rateLimit: RateLimit?
    /// Kept-alive connections, one per endpoint: a client's requests go one after another.
    private let idle = HTTP1ConnectionPool(limit: 1)

    init(
        timeout: TimeInterval, minimumSpeed: MinimumSpeed = .standard, trust: TLSConfiguration = TLSConfiguration(),
        rateLimit: RateLimit? = nil
    ) {
        self.timeout = timeout
        self.minimumSpeed = minimumSpeed
        self.trust = trust
        self.rateLimit = rateLimit
    }

    /// How a body is paced (``rateLimit``) and observed (`observe`); see ``HTTP1Meter/body(limitedBy:observing:)``.
    func meter(observing observe: (@Sendable (Int) -> Void)?) -> HTTP1Meter? {
        HTTP1Meter.body(limitedBy: rateLimit, observing: observe)
    }

    /// The wait for sending one request: at ``minimumSpeed``, silent at most ``timeout``.
    var sending: HTTP1Wait {
        .pace(HTTP1Pace(minimumBytesPerSecond: minimumSpeed.bytesPerSecond, seconds: minimumSpeed.seconds, silence: timeout))
    }

    /// Sends `head` (its fields checked when it was built, see ``HeaderFieldCheck``) with
    /// `body` (its `Content-Length` is set here), paced by ``rateLimit``, `observe` told the bytes
    /// written so far after each slice (from 0 again when the body is sent again), and reads
    /// the whole answer.
    /// - Throws: ``BlobUploadError/network(method:url:reason:code:)``,
    ///   ``BlobUploadError/protocolViolation(operation:url:reason:)`` for an answer that breaks HTTP/1.1,
    ///   ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
    ///   ``BlobUploadError/cancelled``. Other statuses are returned, not thrown.
    func send(
        _ head: HTTPRequestHead, body: Data?, observe: (@Sendable (Int) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        try await send(head, requestBody: body.map(RequestBody.data), observe: observe)
    }

    /// Sends `head` with `body`; see ``send(_:body:observe:)``. A produced body whose producer
    /// stops ends the request with ``BlobUploadError/cancelled``: its producer knows why.
    func send(
        _ head: HTTPRequestHead, requestBody body: RequestBody?, observe: (@Sendable (Int) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        let call = HTTP1Cancellation()
        let meter = meter(observing: observe)
        return try await withBlockingWork(at: .newThread("BlobUpload \(head.method)"), onCancel: call.cancel) {
            self.perform(head, body: body, meter: meter, call: call)
        }.get()
    }

    /// Runs the request, following redirects as ``HTTPRedirectPolicy/upload`` allows (see
    /// ``HTTPReply/redirect(hasBody:followed:)``): only those of a request without a body, within
    /// its origin.
    private func perform(
        _ head: HTTPRequestHead, body: RequestBody?, meter: HTTP1Meter?, call: HTTP1Cancellation
    ) -> Result<HTTPReply, BlobUploadError> {
        var head = head
        var followed = 0
        while true {
            let reply: HTTPReply
            switch performOnce(head, body: body, meter: meter, call: call) {
            case .success(let answer): reply = answer
            case .failure(let error): return .failure(error)
            }
            switch reply.redirect(hasBody: (body?.count ?? 0) > 0, followed: followed, operation: .tus(method: head.method)) {
            case nil: return .success(reply)
            case .failure(let refusal): return .failure(refusal)
            case .success(let follow): (head.url, head.method) = (follow.url, follow.method)
            }
            followed += 1
        }
    }

    private func performOnce(
        _ head: HTTPRequestHead, body: RequestBody?, meter: HTTP1Meter?, call: HTTP1Cancellation
    ) -> Result<HTTPReply, BlobUploadError> {
        let method = head.method
        let url = head.url
        guard let endpoint = head.endpoint else {
            return .failure(.network(
                method: method, url: url.absoluteString, reason: "not an http: or https: URL with a host and a port from 1 to 65535",
                code: URLError.Code.unsupportedURL.rawValue))
        }
        var head = head
        head.contentLength = body?.count
        let headBytes = head.serialized()
        // Every tus request but a creation may be sent again (a repeated PATCH is refused with
        // 409 if the first one did land).
        let policy = HTTP1ReusePolicy(takesIdle: true, resendsAfterStale: method != "POST")
        do throws(HTTP1RequestFailure) {
            let answer = try idle.run(to: endpoint, trust: trust, connectTimeout: timeout, policy: policy, cancellation: call) {
                connection throws(HTTP1Error) in
                let answer = try exchange(on: connection, method: method, head: headBytes, body: body, meter: meter)
                return (answer, answer.reusable)
            }
            let reply = HTTPReply(method: method, url: url, statusCode: answer.head.statusCode,
                                  headers: answer.head.fields, body: Data(answer.body))
            return .success(reply)
        } catch {
            if call.isCancelled { return .failure(.cancelled) }
            // This path carries tus requests only (the streamed PUT has its own).
            return .failure(Self.uploadError(error.error, in: .tus(method: method), method: method, url: url, progress: error.progress, limit: timeout))
        }
    }

    /// Writes the request and reads the answer (``HTTP1Connection/exchange(method:head:body:sending:answerTimeout:keepingAtMost:failingPastLimit:meter:)``:
    /// an early refusal is read, an early success never counts). A produced body starts
    /// anew on every attempt (a resend after a stale connection).
    private func exchange(
        on connection: HTTP1Connection, method: String, head: [UInt8], body: RequestBody?, meter: HTTP1Meter?
    ) throws(HTTP1Error) -> HTTP1Answer {
        switch body {
        case nil:
            return try connection.exchange(
                method: method, head: head, body: nil, sending: sending, answerTimeout: timeout, keepingAtMost: HTTPReply.maxKeptBody)
        case .produced(_, let makeBody)?:
            return try connection.exchange(
                method: method, head: head, producing: makeBody(), sending: sending, answerTimeout: timeout,
                keepingAtMost: HTTPReply.maxKeptBody, meter: meter)
        case .data(let data)?:
            var result: Result<HTTP1Answer, HTTP1Error> = .failure(.cancelled)
            data.withUnsafeBytes { bytes in
                result = Result { () throws(HTTP1Error) in
                    try connection.exchange(
                        method: method, head: head, body: bytes, sending: sending, answerTimeout: timeout,
                        keepingAtMost: HTTPReply.maxKeptBody, meter: meter)
                }
            }
            return try result.get()
        }
    }

    /// The upload error for `error`, naming the method and URL, and for a broken answer the
    /// operation of the request (`operation`): HTTP/1.1 broken under it is a malformed answer,
    /// an answer longer than the protocol ever sends breaks that protocol; `progress` says what
    /// a time-out interrupted, and `limit` (seconds) is its bound.
    static func uploadError(
        _ error: HTTP1Error, in operation: UploadOperation, method: String, url: URL, progress: HTTP1Progress?, limit: TimeInterval
    ) -> BlobUploadError {
        let code: URLError.Code
        let reason: String
        switch error {
        case .cancelled:
            return .cancelled
        case .protocolViolation(let violation):
            return .malformedAnswer(operation: operation, url: url.absoluteString, reason: violation)
        case .answerTooLong:
            return .protocolViolation(operation: operation, url: url.absoluteString, reason: error.reason)
        case .timedOut:
            let seconds = limit == limit.rounded() ? String(Int(limit)) : String(format: "%.1f", limit)
            (reason, code) = ((progress.map { "timed out \($0.activity)" } ?? "timed out") + "; the limit is \(seconds) s", .timedOut)
        case .tooSlow:
            (reason, code) = ("send: \(error.reason)", .timedOut)
        case .network(let text, .unresolved):
            (reason, code) = (text, .cannotFindHost)
        case .network(let text, .refused):
            (reason, code) = (text, .cannotConnectToHost)
        case .network(let text, .lost):
            (reason, code) = (text, .networkConnectionLost)
        case .network(let text, .secureConnectionFailed):
            (reason, code) = ("a secure connection failed: \(text)", .secureConnectionFailed)
        }
        return .network(method: method, url: url.absoluteString, reason: reason, code: code.rawValue)
    }
}
