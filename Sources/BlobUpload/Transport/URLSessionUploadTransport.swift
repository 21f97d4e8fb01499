import BlobStream
import Foundation
internal import HTTP1
#if canImport(FoundationNetworking)
import FoundationNetworking
internal import SystemCalls
#endif

/// The answer to one request: status, headers (looked up case-insensitively) and body.
struct HTTPReply: Sendable {
    var method: String
    var url: URL
    var statusCode: Int
    /// Header fields with lowercased names.
    var headers: [String: String]
    /// The body's first ``maxKeptBody`` bytes.
    var body: Data

    /// Answer bodies are kept up to this size on every transport: tus answers are empty, a
    /// PUT's answer and error pages short, and a server must not decide how much memory a
    /// client holds.
    static let maxKeptBody = 1 << 20

    func header(_ name: String) -> String? { headers[name.lowercased()] }

    var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// At most one short line of the body, for error messages (``HTTPErrorMessage``).
    var message: String? {
        HTTPErrorMessage.message(of: body, contentType: header("content-type"), statusCode: statusCode)
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

    /// The stream of a stream body.
    var stream: InputStream? {
        if case .stream(let stream) = self { return stream }
        return nil
    }
}

/// One URLSession that turns each request into an `async` call, cancelled with the calling
/// task, with redirects of requests that carry a body refused.
///
/// Why not `URLSession.upload(for:from:)`: FoundationNetworking follows a 307/308 by
/// re-sending the request with an *empty* body; only a task delegate can stop that. And why
/// a task delegate on a completion-handler task rather than a session delegate: a session
/// delegate makes FoundationNetworking post a `didSendBodyData` operation to its delegate
/// queue for every 64 KiB it sends — a thread hop each time, which halves the throughput of
/// a large upload. Progress is measured by the callers instead.
final class URLSessionUploadTransport: Sendable {
    private let session: URLSession
    private let submitQueue = DispatchQueue(label: "BlobUpload.URLSessionUploadTransport.submit")

    init(configuration: URLSessionConfiguration) {
        session = URLSession(configuration: configuration)
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
    /// - Throws: ``BlobUploadError/network(method:url:reason:code:)`` when no answer came,
    ///   ``BlobUploadError/redirectRefused(method:url:statusCode:location:)`` when a request
    ///   with a body was redirected,
    ///   ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)`` when one without a
    ///   body was redirected to another origin, ``BlobUploadError/cancelled`` when the calling
    ///   task was cancelled, ``BlobUploadError/malformedAnswer(operation:url:reason:)`` naming
    ///   `operation` when the answer is no valid HTTP/1.1. A non-2xx status is *not* an error
    ///   here: callers decide.
    func send(_ request: URLRequest, body: HTTPBody, as operation: UploadOperation) async throws(BlobUploadError) -> HTTPReply {
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
            method: request.httpMethod ?? "GET", url: request.url ?? URL(fileURLWithPath: "/"), operation: operation,
            interrupter: Interrupter(watching: body.stream))
        let guardian = RedirectGuard(call: call, refuses: hasBody)
        let (session, submitQueue) = (self.session, self.submitQueue)
        let submitted = request
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                call.wait(with: continuation)
                submitQueue.async {
                    guard !call.isFinished else { return }
                    let finish: @Sendable (Data?, URLResponse?, Error?) -> Void = { data, response, error in
                        call.complete(with: call.result(data: data, response: response, error: error))
                    }
                    let task = payload.map { session.uploadTask(with: submitted, from: $0, completionHandler: finish) }
                        ?? session.dataTask(with: submitted, completionHandler: finish)
                    task.delegate = guardian
                    guard call.attach(task) else { return }
                    task.resume()
                }
            }
        } onCancel: {
            call.cancel()
        }
        return try result.get()
    }
}

/// One request from `send` to its answer. Completes exactly once: with URLSession's answer,
/// or with ``BlobUploadError/cancelled`` as soon as the caller is cancelled — a task
/// cancelled before it started may never report completion.
private final class PendingCall: Sendable {
    let method: String
    let url: URL
    /// What a malformed answer is named as.
    let operation: UploadOperation
    /// Unblocks a body read that URLSession's queue is waiting in, so that a cancelled upload
    /// frees that queue.
    private let interrupter: Interrupter
    private let state = LockedValue<State>(State())

    private struct State {
        var continuation: CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>?
        var task: URLSessionTask?
        var refusedRedirect: BlobUploadError?
        var result: Result<HTTPReply, BlobUploadError>?
    }

    init(method: String, url: URL, operation: UploadOperation, interrupter: Interrupter) {
        self.method = method
        self.url = url
        self.operation = operation
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
            guard state.result == nil else { return false }
            state.task = task
            return true
        }
    }

    /// Records why a redirect was not followed: the call's outcome, whatever URLSession reports.
    func refuseRedirect(_ error: BlobUploadError) {
        state.withLock { $0.refusedRedirect = error }
    }

    func complete(with result: Result<HTTPReply, BlobUploadError>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<HTTPReply, BlobUploadError>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            // The task holds its body and, through its delegate, this call: let both go.
            state.task = nil
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }

    func cancel() {
        let task = state.withLock { $0.task }
        complete(with: .failure(.cancelled))
        // URLSessionTask.cancel() waits for URLSession's shared queue, which may be blocked in
        // a read of this very body: unblock the read first, and never wait here.
        interrupter.interrupt()
        if let task {
            DispatchQueue.global().async { task.cancel() }
        }
    }

    /// The typed outcome of URLSession's completion handler.
    func result(data: Data?, response: URLResponse?, error: Error?) -> Result<HTTPReply, BlobUploadError> {
        if let refusal = state.withLock({ $0.refusedRedirect }) { return .failure(refusal) }
        if let error {
            if let urlError = error as? URLError {
                if urlError.code == .cancelled { return .failure(.cancelled) }
                if urlError.isMalformedAnswer {
                    return .failure(.malformedAnswer(operation: operation, url: url.absoluteString, reason: urlError.localizedDescription))
                }
                return .failure(.network(
                    method: method, url: url.absoluteString,
                    reason: urlError.localizedDescription, code: urlError.code.rawValue))
            }
            return .failure(.network(method: method, url: url.absoluteString, reason: error.localizedDescription, code: nil))
        }
        guard let response = response as? HTTPURLResponse else {
            return .failure(.network(method: method, url: url.absoluteString, reason: "no HTTP response", code: nil))
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String {
                headers[name.lowercased()] = value
            }
        }
        // FoundationNetworking has collected the whole body by now; the reply keeps what the
        // socket transport keeps, so the body outlives the call no larger on either transport.
        // The URL that answered, after any redirect, as the socket transport reports it: a
        // relative Location in the answer is relative to it.
        return .success(HTTPReply(
            method: method, url: response.url ?? url, statusCode: response.statusCode, headers: headers,
            body: Data((data ?? Data()).prefix(HTTPReply.maxKeptBody))))
    }
}

/// The task delegate of one request: follows a redirect as ``HTTPRedirectPolicy/upload`` allows
/// (a request without a body, within its origin: FoundationNetworking sends every header field
/// of the request, credentials included, to wherever the redirect points), and stops at any
/// other, recording the refusal.
private final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    private let call: PendingCall
    private let hasBody: Bool
    private let followed = LockedValue(0)

    init(call: PendingCall, refuses: Bool) {
        self.call = call
        self.hasBody = refuses
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // Judged from the URL that answered, and the Location as sent (FoundationNetworking's
        // proposed request drops a trailing slash of the target's path).
        let reply = HTTPReply(
            method: call.method, url: response.url ?? call.url, statusCode: response.statusCode,
            headers: response.value(forHTTPHeaderField: "Location").map { ["location": $0] } ?? [:], body: Data())
        switch reply.redirect(hasBody: hasBody, followed: followed.withLock { $0 }, operation: call.operation) {
        case .success(let follow)?:
            followed.withLock { $0 += 1 }
            var next = request
            (next.url, next.httpMethod) = (follow.url, follow.method)
            completionHandler(next)
        case .failure(let refusal)?:
            call.refuseRedirect(refusal)
            completionHandler(nil)
        case nil:
            completionHandler(nil)
        }
    }
}
