import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why an upload failed. Every case names the URL (and, where it matters, the method, status
/// and byte offset), so the message alone says what went wrong and where.
public enum BlobUploadError: Error, Sendable, Hashable {
    /// Reading the body failed: the stream or its data source reported `error`.
    case source(BlobStreamError)
    /// The server answered `method url` with a status that is neither success nor one the
    /// client handles itself. `message` is the start of the response body, if it had one.
    case httpStatus(method: String, url: String, statusCode: Int, message: String?)
    /// The request could not be sent or its answer not received (refused, reset, timed out).
    /// `code` is the `URLError` code, when there is one.
    case network(method: String, url: String, reason: String, code: Int?)
    /// The server redirected a request that carries a body. Following it would re-send the
    /// body — and FoundationNetworking re-sends an *empty* one on 307/308 — so the redirect is
    /// refused. Send the request to `location` directly instead.
    case redirectRefused(method: String, url: String, statusCode: Int, location: String?)
    /// A `method` request to `url` was not sent because `url` lies on another origin (scheme,
    /// host or port) than `allowedOrigin`, the origin the caller named: a tus upload URL (from
    /// the server's `Location`, or given to resume) off the endpoint's origin, or a redirect
    /// that leaves the origin of the request. The caller's header fields — `Authorization`,
    /// `Cookie` and any other credential — are meant for that origin only, so nothing is sent
    /// elsewhere.
    case crossOriginRefused(method: String, url: String, allowedOrigin: String)
    /// The tus upload at `url` no longer exists (404 or 410: expired or terminated).
    /// Start a new upload, or let the client do it with
    /// ``TusUploadOptions/restartIfGone``.
    case uploadGone(url: String, statusCode: Int)
    /// The server rejected the chunk at `offset` with 460 Checksum Mismatch `attempts` times
    /// in a row: the bytes are corrupted somewhere between this process and the server.
    case checksumMismatch(url: String, offset: Int64, attempts: Int)
    /// The upload at `url` was created for `serverLength` bytes, but the source has
    /// `sourceLength`: it is a different blob, or it changed since the upload started. Also
    /// thrown, with the source's name as `url` and its declared length as `serverLength`,
    /// when an ``UploadSource`` declares a length its ``BlobInputStream`` contradicts.
    case lengthMismatch(url: String, serverLength: Int64?, sourceLength: Int64)
    /// The upload at `url` to be resumed carries the filename `uploadFilename` in its
    /// `Upload-Metadata`, but the source would be uploaded as `sourceFilename` (the
    /// ``TusUploadOptions/filename`` given, or the last component of the source's name): it
    /// is another file. Nothing was sent. Give the upload's name as the filename to resume a
    /// file that was only renamed.
    case filenameMismatch(url: String, uploadFilename: String, sourceFilename: String)
    /// The server accepts uploads of at most `maxSize` bytes; the source has `length` (live
    /// data: at least `length`, and nothing past `maxSize` was sent).
    case tooLarge(endpoint: String, length: Int64, maxSize: Int64)
    /// The server's answer to the request `operation` (which names its protocol: tus, S3, or
    /// plain HTTP for the streamed PUT) at `url` breaks that protocol in a way the client
    /// cannot work around; or it is refused (an S3 redirect to another object).
    case protocolViolation(operation: UploadOperation, url: String, reason: String)
    /// The answer to the request `operation` at `url` is no valid HTTP/1.1, whatever protocol
    /// rides on it: a malformed status line or header field, framing that cannot be used (two
    /// `Content-Length`s that differ), a malformed chunk. The server, or a proxy in front of
    /// it, is broken; asking again will not help.
    case malformedAnswer(operation: UploadOperation, url: String, reason: String)
    /// `method url` was answered with `statusCode` and without the `Tus-Resumable` header
    /// that the tus protocol puts on every answer: no tus server is there (a web server, a
    /// wrong path). Thrown for a creation `POST` answered with success, or with an error after
    /// `OPTIONS` did not show a tus server either (authentication challenges, 401 and 407,
    /// stay ``httpStatus(method:url:statusCode:message:)``), and for a `HEAD` of an upload to
    /// resume answered with success but with neither `Tus-Resumable` nor `Upload-Offset`.
    case notTusServer(method: String, url: String, statusCode: Int)
    /// The length of `source` is not known, but a tus upload must announce it when created.
    case lengthUnknown(source: String)
    /// The live data `source`, whose length is not known until it ends, cannot be uploaded to
    /// the tus server at `endpoint`: its `OPTIONS` answer does not list the
    /// `creation-defer-length` extension (`Tus-Extension`), which such an upload needs to create
    /// the upload before its length is known. Nothing was read from the source or uploaded.
    case deferLengthUnsupported(endpoint: String, source: String)
    /// The upload needs the bytes of the live data `source` from `offset` again (a retry from
    /// an offset the server went back to, a restart, a resume), but live data is read once, in
    /// order, and only the bytes from `available` on are still at hand. Nothing else was sent.
    case notReplayable(source: String, offset: Int64, available: Int64)
    /// The producer of the live data `source` threw `error` after it had yielded `offset`
    /// bytes; the upload stops there, and the server never sees its end.
    case producerFailed(source: String, offset: Int64, error: ProducerError)
    /// The option `name` has a value the client cannot work with; nothing was sent.
    case invalidOption(name: String, reason: String)
    /// The metadata key `key` cannot be sent in `Upload-Metadata`.
    case invalidMetadata(key: String, reason: String)
    /// The request header field `name` cannot be sent: its name is not an HTTP token, or its
    /// value contains a CR, LF or NUL, which would end the field early (header injection).
    case invalidHeader(name: String, reason: String)
    /// `attempts` tries in a row to move the upload at `url` past `offset` failed;
    /// `lastError` is the last failure.
    indirect case retriesExhausted(url: String, offset: Int64, attempts: Int, lastError: BlobUploadError)
    /// The server answered `method url` before the whole body was sent: the transfer ended
    /// after `bytesSent` bytes (`nil` when the stream cannot tell) of `expectedLength` (`nil`
    /// when unknown), with the body stream not at its end. Even a 2xx answer is no success
    /// then: the server stored, or looked at, a truncated body.
    case bodyIncomplete(method: String, url: String, bytesSent: Int64?, expectedLength: Int64?)
    /// The upload was cancelled by its caller (task cancellation). A tus upload can be resumed
    /// later from its URL.
    case cancelled
}

extension BlobUploadError: CustomStringConvertible {
    /// A sentence that says what failed, where, and, where it helps, what to do; the
    /// password of a URL in it is hidden.
    public var description: String { PasswordRedaction.hidingPasswords(in: sentence) }

    private var sentence: String {
        switch self {
        case .source(let error):
            return "reading the upload's source failed: \(error)"
        case .httpStatus(let method, let url, let status, let message):
            let reason = HTTPURLResponse.localizedString(forStatusCode: status)
            let detail = message.map { $0.isEmpty ? "" : ": \($0)" } ?? ""
            return "\(method) \(url): HTTP \(status) \(reason)\(detail)"
        case .network(let method, let url, let reason, _):
            return "\(method) \(url): network error: \(reason)"
        case .redirectRefused(let method, let url, let status, let location):
            let target = location.map { " to \($0)" } ?? ""
            return "\(method) \(url): refused to follow the HTTP \(status) redirect\(target): "
                + "the body, read once from its stream, cannot be sent again; use the target URL directly"
        case .crossOriginRefused(let method, let url, let origin):
            return "\(method) \(url): refused: it is on another origin than \(origin), and the request's header fields "
                + "(credentials among them) are only sent to \(origin)"
        case .uploadGone(let url, let status):
            return "\(url): the upload is gone (HTTP \(status)): it expired or was terminated; start a new upload"
        case .checksumMismatch(let url, let offset, let attempts):
            return "\(url): the server rejected the chunk at offset \(offset) with 460 Checksum Mismatch \(attempts) times in a row"
        case .lengthMismatch(let url, let serverLength, let sourceLength):
            let server = serverLength.map { "\($0) bytes long" } ?? "of an unknown length"
            return "\(url): the source does not match this upload: the upload is \(server), the source \(sourceLength) "
                + "bytes (another blob, or one that changed since the upload started); resume with the blob the upload "
                + "was started with, or start a new upload"
        case .filenameMismatch(let url, let uploadFilename, let sourceFilename):
            return "\(url): the source does not match this upload: the upload is of \"\(uploadFilename)\", the source is "
                + "named \"\(sourceFilename)\"; resume with the file the upload was started with, or give its name as the "
                + "filename (TusUploadOptions.filename, upload --filename) if it was only renamed, or start a new upload"
        case .tooLarge(let endpoint, let length, let maxSize):
            return "\(endpoint): the upload has \(length) bytes but the server accepts at most \(maxSize) (Tus-Max-Size)"
        case .protocolViolation(let operation, let url, let reason):
            return "\(operation) \(url): the server broke the \(operation.protocolName) protocol: \(reason)"
        case .malformedAnswer(let operation, let url, let reason):
            return "\(operation) \(url): the answer is no valid HTTP/1.1: \(reason); the server, or a proxy in front of it, is broken"
        case .notTusServer(let method, let url, let status):
            let reason = HTTPURLResponse.localizedString(forStatusCode: status)
            let what = method == "POST" ? ("a tus server", "the tus creation URL") : ("a tus upload", "the URL of a tus upload")
            return "\(method) \(url): HTTP \(status) \(reason): \(url) does not answer like \(what.0) (the answer has no "
                + "Tus-Resumable header); is it \(what.1)?"
        case .lengthUnknown(let source):
            return "\(source): the length is unknown, but a tus upload must announce it (Upload-Length)"
        case .deferLengthUnsupported(let endpoint, let source):
            return "\(endpoint): the tus server does not support the creation-defer-length extension (it is not in "
                + "Tus-Extension), which an upload of \(source), live data of unknown length, needs; nothing was uploaded"
        case .notReplayable(let source, let offset, let available):
            return "\(source): live data is read only once, in order: the upload needs its bytes from offset \(offset) "
                + "again, but only those from offset \(available) on are still at hand; start a new upload"
        case .producerFailed(let source, let offset, let error):
            return "\(source): the producer of the live data failed after \(offset) bytes: \(error)"
        case .invalidOption(let name, let reason):
            return "option \(name): \(reason)"
        case .invalidMetadata(let key, let reason):
            return "metadata key \"\(key)\" cannot be sent: \(reason)"
        case .invalidHeader(let name, let reason):
            return "request header \"\(name)\" cannot be sent: \(reason)"
        case .retriesExhausted(let url, let offset, let attempts, let last):
            return "\(url): gave up at offset \(offset) after \(attempts) failed attempts in a row; last error: \(last)"
        case .bodyIncomplete(let method, let url, let sent, let expected):
            let count = sent.map { "after \($0) bytes" } ?? "before the body stream's end"
            let total = expected.map { " of \($0)" } ?? ""
            return "\(method) \(url): the transfer ended \(count)\(total): the server answered before the whole body "
                + "was sent, so it has a truncated body"
        case .cancelled:
            return "the upload was cancelled"
        }
    }
}

extension BlobUploadError: LocalizedError {
    /// The same text as ``description``, so `localizedDescription` is useful too.
    public var errorDescription: String? { description }
}

/// The error a producer of live data threw (``UploadSource/live(name:_:)``), kept whole in
/// ``BlobUploadError/producerFailed(source:offset:error:)`` so the caller can match its own
/// error type: `failure.underlying as? MyError`.
///
/// Errors in general are not `Hashable`, and ``BlobUploadError`` is, so two of these are equal
/// when their errors have the same type and the same description.
public struct ProducerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The producer's own error.
    public let underlying: any Error

    /// Wraps `underlying`.
    public init(_ underlying: any Error) {
        self.underlying = underlying
    }

    /// The producer's error, described as its type describes itself.
    public var description: String { String(describing: underlying) }

    /// Whether both wrap errors of the same type with the same description.
    public static func == (lhs: ProducerError, rhs: ProducerError) -> Bool {
        type(of: lhs.underlying) == type(of: rhs.underlying) && lhs.description == rhs.description
    }

    /// Hashes the error's type and description, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: underlying)))
        hasher.combine(description)
    }
}

extension BlobUploadError {
    /// The `URLError` codes of a ``network(method:url:reason:code:)`` failure that asking
    /// again cannot mend, for every client's retry rule: a URL that cannot be used, a host
    /// that does not resolve, a secure connection refused (a certificate, a protocol version).
    static let permanentNetworkCodes: Set<Int> = [
        URLError.Code.badURL.rawValue, URLError.Code.unsupportedURL.rawValue,
        URLError.Code.cannotFindHost.rawValue, URLError.Code.secureConnectionFailed.rawValue,
        URLError.Code.serverCertificateUntrusted.rawValue, URLError.Code.serverCertificateHasBadDate.rawValue,
        URLError.Code.serverCertificateHasUnknownRoot.rawValue,
    ]
}
