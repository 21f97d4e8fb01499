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
    private let submitQueue = DispatchQueue(label: "BlobUpload.HTTPTransport.submit")

    init(configuration: URLSessionConfiguration) {
        delegate = TransportDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        // After every request still waiting on the submit queue: creating a task on an
        // invalidated session is a fatal error.
        let session = self.session
        submitQueue.async { session.finishTasksAndInvalidate() }
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
    ///
    /// URLSession is only touched from `submitQueue`: creating or resuming a task waits for
    /// URLSession's queue, which every session in the process shares and which may be blocked
    /// in a read of some stream body. The caller's thread — one of Swift's few cooperative
    /// threads — never waits for it.
    ///
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
        let payload: Data?
        let hasBody: Bool
        switch body {
        case .none:
            payload = nil
            hasBody = false
        case .data(let data):
            payload = data
            hasBody = !data.isEmpty
        case .stream(let stream):
            request.httpBodyStream = stream
            payload = nil
            hasBody = true
        }
        let call = PendingCall(
            method: request.httpMethod ?? "GET", url: request.url ?? URL(fileURLWithPath: "/"),
            refusesRedirects: hasBody, onBytesSent: onBytesSent, interrupter: BodyInterrupter(body))
        let (session, delegate, submitQueue) = (self.session, self.delegate, self.submitQueue)
        let submitted = request
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                call.wait(with: continuation)
                submitQueue.async {
                    guard !call.isFinished else { return }
                    let task = payload.map { session.uploadTask(with: submitted, from: $0) }
                        ?? session.dataTask(with: submitted)
                    guard call.attach(task) else { return }
                    delegate.register(task.taskIdentifier, call)
                    task.resume()
                }
            }
        } onCancel: {
            call.cancel()
        }
        return try result.get()
    }
}

/// One request from `send` to its answer. Completes exactly once: with the delegate's
/// answer, or with ``BlobUploadError/cancelled`` as soon as the caller is cancelled — a task
/// cancelled before it started may never report completion.
final class PendingCall: Sendable {
    let method: String
    let url: URL
    let refusesRedirects: Bool
    let onBytesSent: (@Sendable (Int64) -> Void)?
    private let interrupter: BodyInterrupter
    private let state = Mutex<State>(State())

    private struct State {
        var continuation: CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>?
        var task: URLSessionTask?
        var result: Result<HTTPReply, BlobUploadError>?
    }

    fileprivate init(
        method: String, url: URL, refusesRedirects: Bool,
        onBytesSent: (@Sendable (Int64) -> Void)?, interrupter: BodyInterrupter
    ) {
        self.method = method
        self.url = url
        self.refusesRedirects = refusesRedirects
        self.onBytesSent = onBytesSent
        self.interrupter = interrupter
    }

    /// Hands over the continuation; resumes it at once if the call already completed.
    func wait(with continuation: CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>) {
        let done = state.withLock { state -> Result<HTTPReply, BlobUploadError>? in
            if state.result == nil { state.continuation = continuation }
            return state.result
        }
        if let done { continuation.resume(returning: done) }
    }

    /// Whether the call has its answer (it was cancelled, if no task has run yet).
    var isFinished: Bool { state.withLock { $0.result != nil } }

    /// Records the task; `false` if the call was cancelled before it and the task must not start.
    func attach(_ task: URLSessionTask) -> Bool {
        state.withLock { state in
            state.task = task
            return state.result == nil
        }
    }

    func complete(with result: Result<HTTPReply, BlobUploadError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }

    func cancel() {
        complete(with: .failure(.cancelled))
        // URLSessionTask.cancel() waits for URLSession's shared queue, which may be blocked in
        // a read of this very body: unblock the read first, and never wait here.
        interrupter.interrupt()
        if let task = state.withLock({ $0.task }) {
            DispatchQueue.global().async { task.cancel() }
        }
    }
}

/// Unblocks a body read that URLSession's queue is waiting in, so that a cancelled upload
/// frees that queue: a ``BlobInputStream`` may be closed from any thread. Other streams
/// promise no such thing and are left alone.
final class BodyInterrupter: @unchecked Sendable {
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

/// What arrived so far for one task.
private struct Exchange {
    var call: PendingCall
    var received = Data()
    var bytesSent: Int64 = 0
    var refusedRedirect: (status: Int, location: String?)?
}

/// Routes URLSession's delegate callbacks to the call of each task.
private final class TransportDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Mutex<[Int: Exchange]>([:])

    func register(_ id: Int, _ call: PendingCall) {
        exchanges.withLock { $0[id] = Exchange(call: call) }
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
            return exchange.call.onBytesSent
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
            guard exchange.call.refusesRedirects else { return false }
            exchange.refusedRedirect = (response.statusCode, request.url?.absoluteString)
            all[task.taskIdentifier] = exchange
            return true
        }
        completionHandler(refuse ? nil : request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        exchange.call.complete(with: Self.result(of: task, exchange: exchange, error: error))
    }

    private static func result(
        of task: URLSessionTask, exchange: Exchange, error: Error?
    ) -> Result<HTTPReply, BlobUploadError> {
        let call = exchange.call
        let urlString = call.url.absoluteString
        if let redirect = exchange.refusedRedirect {
            return .failure(.redirectRefused(
                method: call.method, url: urlString, statusCode: redirect.status, location: redirect.location))
        }
        if let error {
            if let urlError = error as? URLError {
                if urlError.code == .cancelled { return .failure(.cancelled) }
                return .failure(.network(
                    method: call.method, url: urlString,
                    reason: urlError.localizedDescription, code: urlError.code.rawValue))
            }
            return .failure(.network(method: call.method, url: urlString, reason: error.localizedDescription, code: nil))
        }
        guard let response = task.response as? HTTPURLResponse else {
            return .failure(.network(method: call.method, url: urlString, reason: "no HTTP response", code: nil))
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        return .success(HTTPReply(
            method: call.method, url: call.url, statusCode: response.statusCode,
            headers: headers, body: exchange.received, bytesSent: exchange.bytesSent))
    }
}
