import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The answer to a streamed upload.
public struct HTTPUploadResponse: Sendable {
    /// The URL the body was sent to.
    public var url: URL
    /// The HTTP status, always 2xx (other statuses are thrown).
    public var statusCode: Int
    /// The response's header fields, names lowercased.
    public var headers: [String: String]
    /// The start of the response body (at most 64 KiB).
    public var body: Data
    /// How many body bytes were sent.
    public var bytesSent: Int64
}

/// Sends an `InputStream` — a ``BlobInputStream`` in particular — as the body of one HTTP
/// request (PUT by default), without reading it into memory or a temporary file.
///
/// ## On Linux the body is sent chunked
/// FoundationNetworking sends every stream body with `Transfer-Encoding: chunked`, even when
/// a `Content-Length` header is set, so the server must accept chunked request bodies (nginx,
/// most application servers and S3-style stores that do not need a signed length do). For a
/// server that needs `Content-Length`, upload in bounded chunks with ``TusClient`` instead.
///
/// ## How the stream is read
/// URLSession opens the stream itself and reads it, 64 KiB at a time, on one serial queue it
/// shares with every URLSession in the process. A read that waits for another URLSession
/// transfer in this process (a stream of an `http(s):` source) can therefore never finish: a
/// ``BlobInputStream`` of such a source fails at once with
/// ``BlobStreamError/wouldDeadlock(resource:reason:)`` rather than hanging. Upload remote
/// blobs with ``TusClient``, which fills each chunk before the request starts.
///
/// ## Redirects
/// FoundationNetworking would follow a 307/308 by re-sending an *empty* body. Redirects are
/// therefore refused with ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``.
///
/// Thread-safe; one uploader can run many uploads at once.
public final class StreamedUploader: Sendable {
    private let transport: HTTPTransport

    /// Creates an uploader with its own URLSession.
    /// - Parameter configuration: The session configuration, or `nil` for an ephemeral one
    ///   without caches or cookies and a 30 s idle timeout.
    public init(configuration: URLSessionConfiguration? = nil) {
        transport = HTTPTransport(configuration: configuration ?? HTTPTransport.defaultConfiguration())
    }

    /// Sends `body` as the body of a `method` request to `url` and waits for the answer.
    ///
    /// The stream must not be open: URLSession opens it. It is read to its end; when it ends
    /// with an error, or before `expectedLength`, the upload fails even if the server already
    /// answered, because the server then has a truncated body.
    ///
    /// - Parameters:
    ///   - body: The stream to send, not yet opened.
    ///   - url: Where to send it (`http` or `https`).
    ///   - method: The HTTP method, `PUT` by default.
    ///   - headers: Extra request headers (`Content-Type`, authorization).
    ///   - expectedLength: The body's length, when known. It is reported as the progress total
    ///     and checked against the bytes sent.
    ///   - progress: Called on URLSession's delegate queue as body bytes are sent.
    /// - Returns: The 2xx answer.
    /// - Throws: ``BlobUploadError/httpStatus(method:url:statusCode:message:)`` for any other
    ///   status, ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
    ///   ``BlobUploadError/network(method:url:reason:code:)``, ``BlobUploadError/source(_:)``
    ///   when the stream failed or ended early, ``BlobUploadError/cancelled`` when the calling
    ///   task is cancelled (the request is cancelled too).
    public func upload(
        _ body: sending InputStream,
        to url: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        expectedLength: Int64? = nil,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPUploadResponse {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
        }
        var onBytesSent: (@Sendable (Int64) -> Void)?
        if let progress {
            onBytesSent = { sent in progress(UploadProgress(completedBytes: sent, totalBytes: expectedLength)) }
        }
        let bodyCheck = BodyCheck(body)
        let reply: HTTPReply
        do {
            reply = try await transport.send(request, body: .stream(body), onBytesSent: onBytesSent)
        } catch .cancelled {
            throw .cancelled
        } catch {
            // A failing body makes URLSession abort the transfer with a vague network error.
            throw bodyCheck.failure(url: url, bytesSent: nil, expectedLength: nil) ?? error
        }
        // A failed or short body is the more important news: the status may even be a 201
        // for a truncated file.
        if let failure = bodyCheck.failure(url: url, bytesSent: reply.bytesSent, expectedLength: expectedLength) {
            throw failure
        }
        guard reply.isSuccess else { throw reply.statusError() }
        return HTTPUploadResponse(
            url: url, statusCode: reply.statusCode, headers: reply.headers,
            body: reply.body, bytesSent: reply.bytesSent)
    }
}

/// Looks at the body stream once URLSession is done with it: FoundationNetworking ends a body
/// without an error both when the stream reports one and when it merely has no bytes
/// available, so a failed or truncated body would otherwise look like a complete one.
private final class BodyCheck: @unchecked Sendable {
    // Read only after the transfer has completed, when URLSession no longer touches it.
    private let stream: InputStream

    init(_ stream: InputStream) {
        self.stream = stream
    }

    func failure(url: URL, bytesSent: Int64?, expectedLength: Int64?) -> BlobUploadError? {
        if stream.streamStatus == .error {
            if let blob = stream as? BlobInputStream, let error = blob.blobError {
                return .source(error)
            }
            let reason = stream.streamError?.localizedDescription ?? "the stream reported an error"
            return .source(.sourceFailed(resource: "body of \(url.absoluteString)", reason: reason))
        }
        if let expectedLength, let bytesSent, bytesSent != expectedLength {
            return .source(.unexpectedEnd(
                resource: "body of \(url.absoluteString)", offset: bytesSent, expectedLength: expectedLength))
        }
        return nil
    }
}
