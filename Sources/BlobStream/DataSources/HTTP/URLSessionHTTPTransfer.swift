import Foundation
internal import HTTP1
#if canImport(FoundationNetworking)
import FoundationNetworking
internal import SystemCalls
#endif

/// A range request through URLSession: the transport for `https:` (TLS comes with it), and for
/// `http:` when ``HTTPDataSource/Transport/urlSession`` is chosen.
///
/// URLSession cannot pause a download on Linux (`suspend()` removes the transfer from libcurl;
/// body chunks are queued to the delegate without bound), so the read-ahead never asks it for
/// more than fits: each request is a bounded range no larger than the free buffer, and the next
/// one is sent when the reader has made room. Timeouts are timed here, to the millisecond, rather
/// than by URLSession, whose Linux timer counts whole seconds.
///
/// Tasks are created, resumed and cancelled on a private queue, never on the caller's thread:
/// on Linux those calls `sync` onto URLSession's shared work queue, and the caller may be running
/// on that very queue (a stream read as an upload body), where they would deadlock.
final class URLSessionHTTPTransfer: HTTPTransfer {
    private struct Progress {
        var task: URLSessionDataTask?
        var lastActivity = DispatchTime.now()
        var receivedHead = false
        var finished = false
        /// The current window of the minimum speed: since when, and the body bytes in it.
        var windowStart = DispatchTime.now()
        var windowBytes = 0
    }

    /// Where tasks are created, resumed and cancelled.
    private static let controlQueue = DispatchQueue(label: "BlobStream.HTTPDataSource.URLSessionControl")

    private let id: Int
    private let request: HTTPRangeRequest
    private let requestTimeout: TimeInterval
    private let idleTimeout: TimeInterval
    private let minimumSpeed: MinimumSpeed
    private weak let sink: (any HTTPTransferSink)?
    private let progress: LockedValue<Progress>

    /// - Parameters:
    ///   - id: How the transfer names itself to `sink`.
    ///   - request: What to ask.
    ///   - requestTimeout: The longest wait for the response head.
    ///   - idleTimeout: The longest wait for more body bytes.
    ///   - minimumSpeed: The slowest the body may arrive, checked by the same watchdog.
    ///   - sink: Receives the events; held weakly.
    init(
        id: Int, request: HTTPRangeRequest, requestTimeout: TimeInterval, idleTimeout: TimeInterval, minimumSpeed: MinimumSpeed,
        sink: any HTTPTransferSink
    ) {
        self.id = id
        self.request = request
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.minimumSpeed = minimumSpeed
        self.sink = sink
        progress = LockedValue(Progress())
    }

    func start() {
        scheduleTimeoutCheck()
        Self.controlQueue.async { [self] in
            // URLSession's own timer only backs up the watchdog.
            let backstop = (max(requestTimeout, idleTimeout) * 2).rounded(.up) + 1
            let task = URLSessionTransferRouter.session.dataTask(with: request.urlRequest(timeout: backstop))
            let live = progress.withLock { state in
                state.task = task
                state.lastActivity = .now()
                return !state.finished
            }
            guard live else { return }
            URLSessionTransferRouter.shared.register(self, for: task)
            task.resume()
        }
    }

    func cancel() {
        if finish() { cancelTask() }
    }

    private func cancelTask() {
        Self.controlQueue.async { [self] in
            progress.withLock { $0.task }?.cancel()
        }
    }

    /// Marks the transfer finished; `true` the first time only.
    private func finish() -> Bool {
        progress.withLock { state in
            defer { state.finished = true }
            return !state.finished
        }
    }

    /// Checks the timeouts a quarter of the shorter one from now, and so on until finished.
    private func scheduleTimeoutCheck() {
        let tick = min(max(min(requestTimeout, idleTimeout) / 4, 0.01), 1)
        DispatchQueue.global().asyncAfter(deadline: .now() + tick) { [weak self] in
            guard let self, !progress.withLock({ $0.finished }) else { return }
            checkTimeouts()
            scheduleTimeoutCheck()
        }
    }

    private func checkTimeouts() {
        let now = DispatchTime.now().uptimeNanoseconds
        let expired: HTTPTransferFailure? = progress.withLock { state in
            guard !state.finished else { return nil }
            let silent = Double(now - min(now, state.lastActivity.uptimeNanoseconds)) / 1e9
            if !state.receivedHead && silent >= requestTimeout {
                return .timedOut(operation: "waiting for the response", seconds: requestTimeout)
            }
            if state.receivedHead && silent >= idleTimeout {
                return .timedOut(operation: "waiting for body bytes", seconds: idleTimeout)
            }
            return state.receivedHead ? slowness(of: &state, now: now) : nil
        }
        guard let expired, finish() else { return }
        cancelTask()
        sink?.transfer(id, didFinishWith: expired)
    }

    /// The failure of a window of the minimum speed that passed below it; a window that passed
    /// above it starts the next.
    private func slowness(of state: inout Progress, now: UInt64) -> HTTPTransferFailure? {
        let elapsed = Double(now - min(now, state.windowStart.uptimeNanoseconds)) / 1e9
        guard minimumSpeed.bytesPerSecond > 0, elapsed >= minimumSpeed.seconds else { return nil }
        if Double(state.windowBytes) < Double(minimumSpeed.bytesPerSecond) * elapsed {
            let rate = HTTP1Error.tooSlow(bytes: state.windowBytes, seconds: elapsed, minimumBytesPerSecond: minimumSpeed.bytesPerSecond).reason
            return .tooSlow(operation: "waiting for body bytes (\(rate))", seconds: minimumSpeed.seconds)
        }
        state.windowStart = DispatchTime(uptimeNanoseconds: now)
        state.windowBytes = 0
        return nil
    }

    // MARK: Events from the router

    /// The final response arrived; returns whether to go on.
    func didReceive(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else {
            fail(.protocolViolation(reason: "the response is not an HTTP response"), cancelling: false)
            return false
        }
        let live = progress.withLock { state in
            state.receivedHead = true
            state.lastActivity = .now()
            state.windowStart = state.lastActivity
            return !state.finished
        }
        guard live, sink?.transfer(id, didReceive: HTTPResponseHead(http)) == true else {
            // The `.cancel` disposition ends the task: a cancel of our own, racing with it, is
            // what FoundationNetworking traps on (see ``redirect(status:location:)``).
            _ = finish()
            return false
        }
        return true
    }

    /// Body bytes arrived.
    func didReceive(_ data: Data) {
        let live = progress.withLock { state in
            state.lastActivity = .now()
            state.windowBytes += data.count
            return !state.finished
        }
        guard live else { return }
        let keepGoing = data.withUnsafeBytes { sink?.transfer(id, didReceive: $0) == true }
        if !keepGoing { cancel() }
    }

    /// URLSession is about to follow a redirect: it never does. The source decides, by the
    /// redirect rule (``HTTPRedirectPolicy``), as for the socket transport, and sends a new
    /// request if it follows. This task then ends by itself: its 3xx answer reaches
    /// ``didReceive(_:)`` of a finished transfer, which refuses it. It is not cancelled here:
    /// FoundationNetworking traps when a task is cancelled before the redirect callback it is
    /// waiting for has returned ("Received callback for HTTP redirection, but we're not
    /// waiting for it"), as a suite run showed.
    func redirect(status: Int, location: String?) {
        guard let location, finish() else { return }
        sink?.transfer(id, redirectedTo: location, statusCode: status)
    }

    /// The task ended.
    func didComplete(error: (any Error)?) {
        guard finish() else { return }
        guard let error else {
            sink?.transfer(id, didFinishWith: nil)
            return
        }
        sink?.transfer(id, didFinishWith: Self.failure(for: error, timeout: max(requestTimeout, idleTimeout)))
    }

    /// Ends the transfer with `failure`, cancelling the task unless the caller ends it (a
    /// refused response's `.cancel` disposition).
    private func fail(_ failure: HTTPTransferFailure, cancelling: Bool = true) {
        guard finish() else { return }
        if cancelling { cancelTask() }
        sink?.transfer(id, didFinishWith: failure)
    }

    /// Retries what may be passing (connections, DNS, timeouts), not what will not (TLS trust,
    /// malformed URLs and responses).
    private static func failure(for error: any Error, timeout: TimeInterval) -> HTTPTransferFailure {
        let reason = error.localizedDescription
        guard let urlError = error as? URLError else { return .connection(reason: reason) }
        if urlError.isMalformedAnswer { return .protocolViolation(reason: reason) }
        switch urlError.code {
        case .timedOut:
            return .timedOut(operation: "waiting for the server", seconds: timeout)
        case .badURL, .unsupportedURL, .httpTooManyRedirects, .userAuthenticationRequired,
             .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
             .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
             .clientCertificateRequired:
            return .unusable(reason: reason)
        default:
            return .connection(reason: reason)
        }
    }
}
