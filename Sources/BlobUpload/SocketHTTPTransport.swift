import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// HTTP/1.1 over plain TCP for `http:` tus servers: one kept-alive connection, request bodies
/// written with `send` straight from the caller's memory.
///
/// Why not URLSession: FoundationNetworking hands a body to libcurl 64 KiB at a time, each
/// time through dispatch sources, timers and queue hops. For a tus upload, whose bodies are
/// buffers already in memory, that costs several times the CPU of the Python client (see the
/// benchmark); here a 4 MiB chunk is one `send` loop. `https:` still goes through URLSession.
///
/// Redirects are not followed: a 3xx answer to a request with a body is
/// ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``, to one without a body
/// it is returned as it is. Proxies from the environment are not used. One request at a time
/// runs per transport (tus requests of one upload are sequential anyway); ``send(_:body:)``
/// returns only once the socket no longer touches `body`, even when cancelled.
final class SocketHTTPTransport: Sendable {
    /// Seconds a connect, or any single send or receive, may wait.
    let timeout: TimeInterval
    private let queue = DispatchQueue(label: "BlobUpload.SocketHTTPTransport")
    private let idle = Mutex<(host: String, port: Int, connection: SocketConnection)?>(nil)

    init(timeout: TimeInterval) {
        self.timeout = timeout
    }

    /// Sends `request` (method, URL, header fields) with `body` and reads the whole answer.
    /// - Throws: ``BlobUploadError/invalidHeader(name:reason:)`` for a header field that
    ///   cannot be written as it is (nothing is sent then),
    ///   ``BlobUploadError/network(method:url:reason:code:)``,
    ///   ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``,
    ///   ``BlobUploadError/cancelled``. Other statuses are returned, not thrown.
    func send(_ request: URLRequest, body: Data?) async throws(BlobUploadError) -> HTTPReply {
        let call = SocketCall()
        let result: Result<HTTPReply, BlobUploadError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    continuation.resume(returning: self.perform(request, body: body, call: call))
                }
            }
        } onCancel: {
            call.cancel()
        }
        return try result.get()
    }

    private func perform(_ request: URLRequest, body: Data?, call: SocketCall) -> Result<HTTPReply, BlobUploadError> {
        let method = request.httpMethod ?? "GET"
        guard let url = request.url, url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else {
            return .failure(.network(
                method: method, url: request.url?.absoluteString ?? "", reason: "not an http: URL with a host",
                code: URLError.Code.unsupportedURL.rawValue))
        }
        if let problem = HeaderFieldCheck.problem(in: request.allHTTPHeaderFields ?? [:]) {
            return .failure(problem)
        }
        let port = url.port ?? 80
        let head = Self.requestHead(request, method: method, url: url, host: host, bodyLength: body?.count)
        var retriedStale = false
        while true {
            if call.isCancelled { return .failure(.cancelled) }
            let connection: SocketConnection
            if let reused = takeIdle(host: host, port: port) {
                connection = reused
            } else {
                do {
                    connection = try SocketConnection.connect(host: host, port: port, timeout: timeout)
                } catch {
                    return .failure(call.isCancelled ? .cancelled : Self.networkError(error, method, url))
                }
            }
            guard call.watch(connection) else { return .failure(.cancelled) }
            var exchange = HTTPExchange(connection: connection, method: method)
            do {
                let reply = try exchange.run(head: head, body: body, url: url)
                if exchange.reusable, !call.isCancelled {
                    connection.hasBeenUsed = true
                    idle.withLock { $0 = (host, port, connection) }
                }
                if (300..<400).contains(reply.statusCode), let body, !body.isEmpty {
                    let location = reply.header("location").flatMap { URL(string: $0, relativeTo: url)?.absoluteString }
                    return .failure(.redirectRefused(
                        method: method, url: url.absoluteString, statusCode: reply.statusCode, location: location))
                }
                return .success(reply)
            } catch {
                if call.isCancelled { return .failure(.cancelled) }
                // A kept-alive connection the server closed while it was idle fails before any
                // answer; every request but a creation may be sent again on a new one (a
                // repeated PATCH is refused with 409 if the first one did land).
                if connection.hasBeenUsed, !exchange.receivedAnswer, method != "POST", !retriedStale {
                    retriedStale = true
                    continue
                }
                return .failure(Self.networkError(error, method, url))
            }
        }
    }

    private func takeIdle(host: String, port: Int) -> SocketConnection? {
        idle.withLock { idle in
            defer { idle = nil }
            guard let kept = idle, kept.host == host, kept.port == port else { return nil }
            return kept.connection
        }
    }

    private static func networkError(_ error: SocketError, _ method: String, _ url: URL) -> BlobUploadError {
        .network(method: method, url: url.absoluteString, reason: error.reason, code: error.code.rawValue)
    }

    /// The request line and header fields, with `Host` and, for a body, `Content-Length`.
    static func requestHead(_ request: URLRequest, method: String, url: URL, host: String, bodyLength: Int?) -> Data {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        let hostField = host.contains(":") ? "[\(host)]" : host
        var lines = ["\(method) \(target) HTTP/1.1", "Host: \(hostField)" + (url.port.map { ":\($0)" } ?? "")]
        if let bodyLength { lines.append("Content-Length: \(bodyLength)") }
        let reserved: Set<String> = ["host", "content-length", "connection", "transfer-encoding"]
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key })
        where !reserved.contains(name.lowercased()) {
            lines.append("\(name): \(value)")
        }
        return Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }
}

/// The cancellation state of one request: which connection to shut down.
private final class SocketCall: Sendable {
    private let state = Mutex<(cancelled: Bool, connection: SocketConnection?)>((false, nil))

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Records the connection in use; `false` (and the connection is shut) if already cancelled.
    func watch(_ connection: SocketConnection) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            state.connection = connection
            return state.cancelled
        }
        if cancelled { connection.shutdown() }
        return !cancelled
    }

    func cancel() {
        let connection = state.withLock { state -> SocketConnection? in
            state.cancelled = true
            return state.connection
        }
        connection?.shutdown()
    }
}
