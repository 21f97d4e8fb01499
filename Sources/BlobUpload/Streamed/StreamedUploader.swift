import BlobStream
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The answer to a streamed upload.
public struct HTTPUploadResponse: Sendable {
    /// The URL the body was sent to.
    public var url: URL
    /// The HTTP status, only given once the whole body was sent: 2xx, or 303 (See Other) from a
    /// server that handled the request and points at its result (`location` in ``headers``).
    /// Other statuses are thrown.
    public var statusCode: Int
    /// The response's header fields, names lowercased.
    public var headers: [String: String]
    /// The response body.
    public var body: Data
    /// How many body bytes were read from a ``PositionedInputStream`` body (such as a
    /// ``BlobInputStream``) and sent, or `nil` for another kind of stream, which cannot tell.
    public var bytesSent: Int64?
}

/// Sends an `InputStream` — a ``BlobInputStream`` in particular — as the body of one HTTP
/// request (PUT by default), without reading it into memory or a temporary file.
///
/// ## How the stream is read and framed
/// With ``Transport/automatic`` (`http:`, and `https:` on Linux), the package's own HTTP/1.1
/// client opens the stream and reads it, 1 MiB at a time, on a thread of its own, each read
/// sent straight from its buffer. A body of known length (`expectedLength`) goes out with
/// `Content-Length`, which every server takes (S3's presigned PUTs refuse chunked bodies); one
/// of unknown length, chunked. Either way, the bytes that complete the body for the server —
/// the last byte of the declared length, the last chunk — go out only once the stream ended
/// without an error at `expectedLength`, so a failed, short or long stream never leaves the
/// server a body that looks whole.
///
/// Otherwise URLSession sends every stream body chunked (FoundationNetworking ignores a
/// `Content-Length` field then), opens the stream itself and reads it, 64 KiB at a time, on one serial
/// queue it shares with every URLSession in the process: while a read waits, no URLSession of
/// the process makes progress. A read that waits for a URLSession download in this process (a
/// stream of an `https:` source) could therefore never finish: such a ``BlobInputStream``
/// fails at once with ``BlobStreamError/wouldDeadlock(resource:reason:)`` rather than hanging.
/// Upload remote blobs with ``TusClient``, which fills each chunk before its request starts.
///
/// ## Redirects
/// FoundationNetworking would follow a 307/308 by re-sending an *empty* body, and a stream
/// cannot be read twice. Redirects are
/// therefore refused with ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
/// whatever their target: the body and the header fields (credentials among them) go to
/// `url` and nowhere else. A 303 after the whole body is no redirect but the answer: the server
/// handled the request and names where its result is.
///
/// Thread-safe; one uploader can run many uploads at once.
public final class StreamedUploader: Sendable {
    /// How requests travel: `http:` over the package's own client, or everything through URLSession.
    public var transport: Transport { client.transport }
    /// Called before each request for fields to add (a fresh token; see ``HeaderProvider``);
    /// they win over the call's `headers`. A 401 or 403 asks it again and sends the request
    /// once more where the body can be read again (an ``UploadSource`` that is not live).
    public let headerProvider: HeaderProvider?
    /// The most bytes per second bodies go out at (see ``RateLimit``), on the package's own
    /// client; URLSession reads the stream at its own pace and is not limited.
    public var rateLimit: RateLimit? { client.rateLimit }
    private let client: UploadHTTPClient

    /// Creates an uploader with its own URLSession.
    /// - Parameters:
    ///   - configuration: The session configuration, or `nil` for an ephemeral one without
    ///     caches or cookies and a 30 s idle timeout. On the `http:` connections of the
    ///     package's own client, its `timeoutIntervalForRequest` bounds a connect, the whole
    ///     answer from the end of the body (a server answering one byte at a time cannot
    ///     stretch it), and a silence while the body is sent.
    ///   - transport: How requests travel; ``Transport/automatic`` by default.
    ///   - minimumSpeed: The slowest the body may be sent on those connections (a server
    ///     reading it one byte at a time fails the upload with a time-out);
    ///     ``MinimumSpeed/standard`` by default.
    ///   - headerProvider: Fields computed before each request (see ``headerProvider``).
    ///   - rateLimit: The most bytes per second a body goes out at; `nil` for no limit.
    public init(
        configuration: URLSessionConfiguration? = nil, transport: Transport = .automatic, minimumSpeed: MinimumSpeed = .standard,
        headerProvider: HeaderProvider? = nil, rateLimit: RateLimit? = nil
    ) {
        self.headerProvider = headerProvider
        client = UploadHTTPClient(
            transport: transport, configuration: configuration ?? URLSessionUploadTransport.defaultConfiguration(), minimumSpeed: minimumSpeed,
            rateLimit: rateLimit)
    }

    /// Sends `body` as the body of a `method` request to `url` and waits for the answer.
    ///
    /// The stream must not be open: URLSession opens it, and must read it to its end. When it
    /// ends with an error, when the server answers before URLSession read it to its end (the
    /// stream is neither `.atEnd` nor, keeping no status, out of bytes; for a
    /// ``PositionedInputStream``, also not at its length), or when a
    /// ``PositionedInputStream`` yields another byte count than `expectedLength`, the upload fails
    /// even if the server answered 2xx, because the server then has a truncated body.
    ///
    /// - Parameters:
    ///   - body: The stream to send, not yet opened.
    ///   - url: Where to send it (`http` or `https`).
    ///   - method: The HTTP method, `PUT` by default.
    ///   - headers: Extra request headers (`Content-Type`, authorization). Over the package's own
    ///     client, `Host`, the framing fields, `Connection` and `Expect` are its own: a
    ///     caller's are not sent (the body goes out at once, without waiting for a 100).
    ///   - expectedLength: The body's length, when known: the progress total, and checked
    ///     against the bytes a ``PositionedInputStream`` body yielded.
    ///   - progress: Called about ten times a second, on a private queue, with the bytes read
    ///     from the body so far, and once more at the end. Only a ``PositionedInputStream``
    ///     body can report them; for other streams it is never called.
    /// - Returns: The 2xx (or 303) answer; see ``HTTPUploadResponse/statusCode``.
    /// - Throws: ``BlobUploadError/invalidHeader(name:reason:)`` for a header field with a CR,
    ///   LF or NUL, or a name that is not an HTTP token (nothing is sent then),
    ///   ``BlobUploadError/httpStatus(method:url:statusCode:message:)`` for any other
    ///   status, ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
    ///   ``BlobUploadError/network(method:url:reason:code:)``, ``BlobUploadError/source(_:)``
    ///   when the stream failed or yielded another length than `expectedLength`,
    ///   ``BlobUploadError/bodyIncomplete(method:url:bytesSent:expectedLength:)`` when a 2xx
    ///   answer came before the body was read to its end, ``BlobUploadError/cancelled`` when the calling
    ///   task is cancelled (the request is cancelled too).
    public func upload(
        _ body: sending InputStream,
        to url: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        expectedLength: Int64? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPUploadResponse {
        try await upload(body, to: url, method: method, headers: headers, expectedLength: expectedLength, refusedStatus: nil, progress: progress)
    }

    /// The stream form, its header provider asked with `refusedStatus` (a retry after a refusal).
    private func upload(
        _ body: sending InputStream, to url: URL, method: String, headers: [String: String], expectedLength: Int64?,
        refusedStatus: Int?, progress: (@Sendable (TransferProgress) -> Void)?
    ) async throws(BlobUploadError) -> HTTPUploadResponse {
        var fields = headers
        if let headerProvider {
            let provided = await headerProvider(HeaderRequest(method: method, url: url, refusedStatus: refusedStatus))
            fields.merge(provided, uniquingKeysWith: { $1 })
        }
        let head = try HeaderFieldCheck.head(method: method, url: url, fields: fields)
        let probe = BodyProbe(body)
        let ticker = progress.flatMap { progress in
            probe.startReporting { progress(TransferProgress(completedBytes: $0, totalBytes: expectedLength)) }
        }
        defer { ticker?.cancel() }
        let reply: HTTPReply
        do {
            reply = try await client.send(head, streaming: body, expectedLength: expectedLength)
        } catch .cancelled {
            throw .cancelled
        } catch {
            // A failing body makes URLSession abort the transfer with a vague network error.
            throw probe.sourceFailure(url: url) ?? error
        }
        // A failed body is the more important news: the status may even be a 201 for a
        // truncated file.
        if let failure = probe.sourceFailure(url: url) {
            throw failure
        }
        guard reply.isSuccess || reply.statusCode == 303 else { throw reply.statusError() }
        // FoundationNetworking completes a task without an error when the server answered
        // before the body was read to its end: a 2xx for a truncated body.
        if let failure = probe.incompleteness(method: method, url: url, expectedLength: expectedLength) {
            throw failure
        }
        ticker?.cancel()
        if let progress, let sent = probe.bytesRead {
            progress(TransferProgress(completedBytes: sent, totalBytes: expectedLength))
        }
        return HTTPUploadResponse(
            url: url, statusCode: reply.statusCode, headers: reply.headers, body: reply.body, bytesSent: probe.bytesRead)
    }

    /// Sends the bytes of `source` as the body of a `method` request to `url`, as
    /// ``upload(_:to:method:headers:expectedLength:progress:)`` sends a stream: with
    /// `Content-Length` when the source declares its length (checked against the bytes read),
    /// chunked otherwise.
    ///
    /// This is how live data of unknown length (``UploadSource/live(name:_:)``) is sent in one
    /// request: its producer is pulled as the connection takes the bytes, and a producer that
    /// throws fails the upload with ``BlobUploadError/producerFailed(source:offset:error:)``
    /// (the server never gets the end of the body, so it stores nothing).
    /// - Parameters:
    ///   - source: Read once, from its first byte.
    ///   - url: Where to send it (`http` or `https`).
    ///   - method: The HTTP method, `PUT` by default.
    ///   - headers: Extra request headers (`Content-Type`, authorization). Over the package's own
    ///     client, `Host`, the framing fields, `Connection` and `Expect` are its own: a
    ///     caller's are not sent (the body goes out at once, without waiting for a 100).
    ///   - progress: As for a stream body.
    /// - Returns: The 2xx (or 303) answer; see ``HTTPUploadResponse/statusCode``.
    /// - Throws: What the stream form throws, and ``BlobUploadError/producerFailed(source:offset:error:)``.
    public func upload(
        _ source: UploadSource,
        to url: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPUploadResponse {
        // At offset 0, every source's stream starts at its first byte; one pin for both tries,
        // so a retry after a refusal sends the same version.
        let pin = VersionPin()
        let body = try source.stream(at: 0, pinnedTo: pin)
        do {
            return try await upload(
                body.stream, to: url, method: method, headers: headers, expectedLength: source.length, refusedStatus: nil,
                progress: progress)
        } catch .httpStatus(_, _, let status, _) where headerProvider != nil && !source.isLive
            && HeaderRequest(method: method, url: url).renewal(after: status) != nil {
            // Refused for its credentials: a source read again from its first byte can be sent
            // once more, with the provider's renewed fields.
            let again = try source.stream(at: 0, pinnedTo: pin)
            do {
                return try await upload(
                    again.stream, to: url, method: method, headers: headers, expectedLength: source.length, refusedStatus: status,
                    progress: progress)
            } catch {
                throw source.explaining(error)
            }
        } catch {
            throw source.explaining(error)
        }
    }
}

/// Watches the body stream: how far URLSession has read it (polled, so reads pay nothing),
/// and, once URLSession is done, whether it failed or was left unread — FoundationNetworking
/// ends a body without an error when the stream reports one, when it merely has no bytes
/// available, and when the server answered before the body was read, so a failed or
/// truncated body would otherwise look like a complete one.
private final class BodyProbe: @unchecked Sendable {
    // `stream` is looked at only after the transfer completed, when URLSession no longer
    // touches it; `positioned` (the same object) only through members that are thread-safe.
    private let stream: InputStream
    private let positioned: (any MeasuredStream)?

    init(_ stream: InputStream) {
        self.stream = stream
        positioned = stream as? any MeasuredStream
    }

    /// The bytes read from a ``MeasuredStream`` body so far, or `nil` for another stream.
    var bytesRead: Int64? { positioned?.offset }

    /// Calls `report` every 100 ms with ``bytesRead`` until the returned timer is cancelled;
    /// `nil` when the stream cannot tell.
    func startReporting(_ report: @escaping @Sendable (Int64) -> Void) -> DispatchSourceTimer? {
        guard positioned != nil else { return nil }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "BlobUpload.StreamedUploader.progress"))
        timer.schedule(deadline: .now() + 0.1, repeating: 0.1)
        timer.setEventHandler { [self] in
            if let read = bytesRead { report(read) }
        }
        timer.resume()
        return timer
    }

    /// The body stream's own failure (status `.error`), if it had one.
    func sourceFailure(url: URL) -> BlobUploadError? {
        guard stream.streamStatus == .error else { return nil }
        return stream.uploadFailure(resource: "body of \(url.absoluteString)", at: nil)
    }

    /// Why the finished transfer did not send the whole body, if it did not: the stream is
    /// not at its end (the server answered before URLSession read it all), or — for a
    /// ``PositionedInputStream`` — stopped short of its own length or of `expectedLength`.
    func incompleteness(method: String, url: URL, expectedLength: Int64?) -> BlobUploadError? {
        let length = positioned?.length
        let atEnd = stream.saysItEnded && (length == nil || bytesRead == length)
        guard atEnd else {
            return .bodyIncomplete(
                method: method, url: url.absoluteString, bytesSent: bytesRead, expectedLength: expectedLength ?? length)
        }
        if let expectedLength, let read = bytesRead, read != expectedLength {
            return .source(.unexpectedEnd(
                resource: "body of \(url.absoluteString)", offset: read, expectedLength: expectedLength))
        }
        return nil
    }
}
