import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The answer to one request: status, headers (looked up case-insensitively) and the start of
/// the body.
struct HTTPReply: Sendable {
    var method: String
    var url: URL
    var statusCode: Int
    /// Header fields with lowercased names.
    var headers: [String: String]
    /// The body, truncated to ``HTTPTransport/maxKeptBodyBytes``.
    var body: Data
    /// Body bytes URLSession reported as handed to the connection.
    var bytesSent: Int64

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// The start of the body as text, for error messages.
    var message: String? {
        guard !body.isEmpty else { return nil }
        let text = String(decoding: body.prefix(300), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    func statusError() -> BlobUploadError {
        .httpStatus(method: method, url: url.absoluteString, statusCode: statusCode, message: message)
    }
}

/// What a request carries.
enum HTTPBody {
    case none
    /// A body of known length: sent with `Content-Length`.
    case data(Data)
    /// A stream body: URLSession opens and reads it on its own queue, and on Linux always
    /// sends it with `Transfer-Encoding: chunked`.
    case stream(InputStream)
}

/// One URLSession with a delegate that turns each task into an `async` call: progress of the
/// body, cancellation through the calling task, and redirects of requests with a body refused.
///
/// Why a delegate instead of `URLSession.upload(for:from:)`: FoundationNetworking follows a
/// 307/308 by re-sending the request with an *empty* body; only a delegate can stop that.
final class HTTPTransport: Sendable {
    /// Response bodies are kept only up to this size: tus answers are empty and an error
    /// page only needs its first lines in a message.
    static let maxKeptBodyBytes = 64 * 1024

    private let session: URLSession
    private let delegate: TransportDelegate

    init(configuration: URLSessionConfiguration) {
        delegate = TransportDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// A configuration without caches, cookies or credential storage, with the 30 s idle
    /// timeout the tus protocol recommends (FoundationNetworking restarts the timer on every
    /// byte sent or received, so it bounds silence, not the length of a transfer).
    static func defaultConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        configuration.timeoutIntervalForRequest = 30
        return configuration
    }

    /// Sends `request` with `body` and waits for the whole answer.
    /// - Parameter onBytesSent: Called on URLSession's delegate queue with the total number of
    ///   body bytes handed to the connection so far.
    /// - Throws: ``BlobUploadError/network(method:url:reason:code:)`` when no answer came,
    ///   ``BlobUploadError/redirectRefused(method:url:statusCode:location:)`` when a request
    ///   with a body was redirected, ``BlobUploadError/cancelled`` when the calling task was
    ///   cancelled. A non-2xx status is *not* an error here: callers decide.
    func send(
        _ request: URLRequest,
        body: HTTPBody,
        onBytesSent: (@Sendable (Int64) -> Void)? = nil
    ) async throws(BlobUploadError) -> HTTPReply {
        var request = request
        let task: URLSessionTask
        let hasBody: Bool
        switch body {
        case .none:
            task = session.dataTask(with: request)
            hasBody = false
        case .data(let data):
            task = session.uploadTask(with: request, from: data)
            hasBody = !data.isEmpty
        case .stream(let stream):
            request.httpBodyStream = stream
            task = session.dataTask(with: request)
            hasBody = true
        }
        let method = request.httpMethod ?? "GET"
        let url = request.url ?? URL(fileURLWithPath: "/")
        let id = task.taskIdentifier
        let delegate = self.delegate
        let interrupter = BodyInterrupter(body)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.register(id, Exchange(
                    method: method, url: url, refusesRedirects: hasBody,
                    onBytesSent: onBytesSent, continuation: continuation))
                if Task.isCancelled {
                    delegate.finish(id, with: .failure(.cancelled))
                    DispatchQueue.global().async { task.cancel() }
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            // Answer at once: a task cancelled before it started may never report completion.
            delegate.finish(id, with: .failure(.cancelled))
            // URLSessionTask.cancel() waits for URLSession's shared queue, which may be
            // blocked in a read of the body stream: unblock the read, and never wait here.
            interrupter.interrupt()
            DispatchQueue.global().async { task.cancel() }
        }
        return try result.get()
    }
}

/// Unblocks a body read that URLSession's queue is waiting in, so that a cancelled upload
/// frees that queue: a ``BlobInputStream`` may be closed from any thread. Other streams
/// promise no such thing and are left alone.
private final class BodyInterrupter: @unchecked Sendable {
    // Only ever closed, which BlobInputStream allows from any thread.
    private let stream: BlobInputStream?

    init(_ body: HTTPBody) {
        if case .stream(let stream) = body {
            self.stream = stream as? BlobInputStream
        } else {
            stream = nil
        }
    }

    func interrupt() {
        stream?.close()
    }
}

/// The state of one request between `resume()` and its completion.
private struct Exchange {
    var method: String
    var url: URL
    var refusesRedirects: Bool
    var onBytesSent: (@Sendable (Int64) -> Void)?
    var continuation: CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>
    var received = Data()
    var bytesSent: Int64 = 0
    var refusedRedirect: (status: Int, location: String?)?
}

/// Routes URLSession's delegate callbacks to the exchange of each task.
private final class TransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Mutex<[Int: Exchange]>([:])

    func register(_ id: Int, _ exchange: Exchange) {
        exchanges.withLock { $0[id] = exchange }
    }

    /// Resumes the caller of `id` once; later calls for the same task do nothing.
    func finish(_ id: Int, with result: Result<HTTPReply, BlobUploadError>) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: id) }
        exchange?.continuation.resume(returning: result)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchanges.withLock { all in
            guard var exchange = all[dataTask.taskIdentifier] else { return }
            let room = HTTPTransport.maxKeptBodyBytes - exchange.received.count
            if room > 0 {
                exchange.received.append(data.prefix(room))
                all[dataTask.taskIdentifier] = exchange
            }
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64, totalBytesExpectedToSend: Int64
    ) {
        let callback = exchanges.withLock { all -> (@Sendable (Int64) -> Void)? in
            guard var exchange = all[task.taskIdentifier] else { return nil }
            exchange.bytesSent = totalBytesSent
            all[task.taskIdentifier] = exchange
            return exchange.onBytesSent
        }
        callback?(totalBytesSent)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let refuse = exchanges.withLock { all -> Bool in
            guard var exchange = all[task.taskIdentifier] else { return true }
            guard exchange.refusesRedirects else { return false }
            exchange.refusedRedirect = (response.statusCode, request.url?.absoluteString)
            all[task.taskIdentifier] = exchange
            return true
        }
        completionHandler(refuse ? nil : request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let exchange = exchanges.withLock({ $0[task.taskIdentifier] }) else { return }
        finish(task.taskIdentifier, with: Self.result(of: task, exchange: exchange, error: error))
    }

    private static func result(
        of task: URLSessionTask, exchange: Exchange, error: Error?
    ) -> Result<HTTPReply, BlobUploadError> {
        let urlString = exchange.url.absoluteString
        if let redirect = exchange.refusedRedirect {
            return .failure(.redirectRefused(
                method: exchange.method, url: urlString, statusCode: redirect.status, location: redirect.location))
        }
        if let error {
            if let urlError = error as? URLError {
                if urlError.code == .cancelled { return .failure(.cancelled) }
                return .failure(.network(
                    method: exchange.method, url: urlString,
                    reason: urlError.localizedDescription, code: urlError.code.rawValue))
            }
            return .failure(.network(
                method: exchange.method, url: urlString, reason: error.localizedDescription, code: nil))
        }
        guard let response = task.response as? HTTPURLResponse else {
            return .failure(.network(
                method: exchange.method, url: urlString, reason: "no HTTP response", code: nil))
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        return .success(HTTPReply(
            method: exchange.method, url: exchange.url, statusCode: response.statusCode,
            headers: headers, body: exchange.received, bytesSent: exchange.bytesSent))
    }
}
