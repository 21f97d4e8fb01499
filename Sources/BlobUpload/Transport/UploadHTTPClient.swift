import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import HTTP1

/// How the upload clients (tus, the streamed PUT) send a request: over the package's own
/// HTTP/1.1 client or URLSession, as ``Transport/route(for:)`` says — the one place an upload
/// chooses. Both carriers follow the redirect rule (``HTTPReply/redirect(hasBody:followed:)``)
/// and keep at most ``HTTPReply/maxKeptBody`` of an answer.
final class UploadHTTPClient: Sendable {
    /// How requests travel.
    let transport: Transport
    /// The most bytes per second request bodies go out at (see ``RateLimit``).
    let rateLimit: RateLimit?
    private let socket: SocketHTTPTransport
    private let urlSession: URLSessionUploadTransport

    /// - Parameters:
    ///   - configuration: URLSession's; its `timeoutIntervalForRequest` bounds the own client's
    ///     connect, a whole answer, and a silence while a request is sent.
    ///   - minimumSpeed: The slowest a request body may be sent on the own client.
    ///   - rateLimit: Paces bodies as they are written on the own client; through URLSession a
    ///     body of known length waits for its whole share before it is handed over, and a stream
    ///     body is not limited.
    init(transport: Transport, configuration: URLSessionConfiguration, minimumSpeed: MinimumSpeed, rateLimit: RateLimit? = nil) {
        self.transport = transport
        self.rateLimit = rateLimit
        socket = SocketHTTPTransport(
            timeout: configuration.timeoutIntervalForRequest, minimumSpeed: minimumSpeed, trust: transport.trust.configuration,
            rateLimit: rateLimit)
        urlSession = URLSessionUploadTransport(configuration: configuration)
    }

    /// Sends `head` with `body` (its length set here) and reads the answer; statuses are
    /// returned, not thrown. `observe` is told the body bytes written so far (from 0 again
    /// when the body is sent again; on the own client; URLSession does not tell).
    /// A produced body (``RequestBody/produced(count:makeBody:)``) needs the own client
    /// (``isDoneWithBodies(at:)``); through URLSession it fails with
    /// ``BlobUploadError/invalidOption(name:reason:)`` before anything is sent.
    func send(
        _ head: HTTPRequestHead, body requestBody: RequestBody?, observe: (@Sendable (Int) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        switch transport.route(for: head.url) {
        case .own:
            return try await socket.send(head, requestBody: requestBody, observe: observe)
        case .urlSession:
            let body: Data?
            switch requestBody {
            case nil: body = nil
            case .data(let data)?: body = data
            case .produced?: throw .invalidOption(name: "transport", reason: "a body read while it is sent needs the package's own client")
            }
            if let rateLimit, let body, !body.isEmpty {
                do {
                    try await rateLimit.paced(body.count)
                } catch {
                    throw .cancelled
                }
            }
            return try await urlSession.send(URLRequest(head), body: body.map(HTTPBody.data) ?? .none, as: .tus(method: head.method))
        }
    }

    /// Sends `head` with `body` read to its end, chunked; statuses are returned, not thrown.
    func send(_ head: HTTPRequestHead, streaming body: InputStream, expectedLength: Int64?) async throws(BlobUploadError) -> HTTPReply {
        switch transport.route(for: head.url) {
        case .own: try await socket.send(head, streaming: body, expectedLength: expectedLength)
        case .urlSession: try await urlSession.send(URLRequest(head), body: .stream(body), as: .http(method: head.method))
        }
    }

    /// Whether a request to `url` is finished with its body when it returns, so the body may
    /// share memory that the caller reuses afterwards (URLSession may still hold it).
    func isDoneWithBodies(at url: URL) -> Bool {
        transport.route(for: url).pausesDownloads
    }
}
