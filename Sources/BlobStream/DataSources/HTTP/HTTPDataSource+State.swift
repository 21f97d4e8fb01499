import Foundation
internal import HTTP1

/// The read-ahead's state and the transitions shared by reads and transfer events. Every
/// function here runs with the state's lock held and only records what to do afterwards in
/// ``Effects``: transfers are started and cancelled, and callbacks called, after unlocking.
extension HTTPDataSource {
    struct State: Sendable {
        var isOpen = false
        var pendingOpen: (@Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void)?
        /// What the first response said; every later response must match it.
        var pinned: BlobSourceDescription?
        /// The validators of the first response, which every later one must name too.
        var pinnedVersion: HTTPBlobVersion?
        /// The pin came from a `416` at the blob's end that named no validator: only the length
        /// is known, and no byte was read under it, so the first answer with bytes pins its own.
        var pinHasLengthOnly = false
        /// The length once any response told it (the pinned one may be unknown).
        var knownLength: Int64?
        var buffer: ReadAheadBuffer?
        /// The blob offset of the buffer's first byte. Kept across close and open, so a reopen
        /// resumes where the reader is.
        var bufferStart: Int64 = 0
        var transfer: ActiveTransfer?
        /// What the latest transfer asked for: after a redirect, not ``HTTPDataSource/url``.
        var lastRequestURL: URL?
        /// Every byte up to the end of the blob has been downloaded.
        var endOfData = false
        /// Why no byte after the buffered ones can be read.
        var failure: BlobStreamError?
        var waiter: (@Sendable () -> Void)?
        var nextTransferID = 0
        var consecutiveFailures = 0
        /// Attempts that failed as too slow since the source was opened or sought: unlike
        /// ``consecutiveFailures``, not reset by the progress they made.
        var slowFailures = 0
        /// Identifies the pending reconnect; bumped to call it off.
        var retryToken = 0
        var retryPending = false
        /// No request starts before this: the end of the wait before a retry (the backoff, or
        /// the server's `Retry-After`), which a seek or a reopen does not cut short.
        var notBefore: DispatchTime?
        var lastTransferUsedURLSession = false
        var statistics = Statistics()

        /// The offset of the first byte not yet downloaded.
        var frontier: Int64 { bufferStart + Int64(buffer?.count ?? 0) }
    }

    struct ActiveTransfer: Sendable {
        let id: Int
        let object: any HTTPTransfer
        let request: HTTPRangeRequest
        let usesURLSession: Bool
        let redirects: Int
        var receivedHead = false
        var skip: Int64 = 0
        var bodyEnd: Int64?
        var declaresBodyEnd = true
        var ignoresRange = false
        var spaceWaiter: DispatchSemaphore?
        /// Set for an answer with a final error status, whose body is read for its message.
        var errorBody: ErrorBody?
    }

    /// The start of an error answer's body (at most ``HTTPErrorMessage/maxBodyBytes``), read for
    /// at most ``seconds`` (``HTTPDataSource/errorBodyTimeUp(transfer:)``): the message is a
    /// courtesy, and a body that trickles in or stalls must not hold the error back.
    struct ErrorBody: Sendable {
        static let seconds = 5.0
        let statusCode: Int
        let contentType: String?
        var bytes: [UInt8] = []

        /// Whether the bytes the message looks at all arrived.
        var isComplete: Bool { bytes.count >= HTTPErrorMessage.maxBodyBytes }
    }

    /// What to do once the lock is released, in this order.
    struct Effects {
        var cancel: [any HTTPTransfer] = []
        var signal: [DispatchSemaphore] = []
        var open: (@Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void, Result<BlobSourceDescription, BlobStreamError>)?
        var wake: [@Sendable () -> Void] = []
        var start: [any HTTPTransfer] = []
        var retry: (delay: TimeInterval, token: Int)?
        var retryNotice: Retry?
        /// The transfer whose error body began: its time is up ``ErrorBody/seconds`` from now.
        var errorBodyStarted: Int?
    }

    /// Runs `body` with the lock held, then its effects.
    func transition<T: Sendable>(_ body: (inout State, inout Effects) -> T) -> T {
        var effects = Effects()
        let result = state.withLock { body(&$0, &effects) }
        perform(effects)
        return result
    }

    private func perform(_ effects: Effects) {
        for transfer in effects.cancel { transfer.cancel() }
        for semaphore in effects.signal { semaphore.signal() }
        if let (completion, result) = effects.open { completion(result) }
        for callback in effects.wake { callback() }
        for transfer in effects.start { transfer.start() }
        if let notice = effects.retryNotice { configuration.retryObserver?(notice) }
        if let (delay, token) = effects.retry {
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.retryTimerFired(token: token)
            }
        }
        if let id = effects.errorBodyStarted {
            DispatchQueue.global().asyncAfter(deadline: .now() + ErrorBody.seconds) { [weak self] in
                self?.errorBodyTimeUp(transfer: id)
            }
        }
    }

    // MARK: Transitions

    /// Starts a transfer for `request` (its `end` is set here, by transport).
    func startTransfer(_ request: HTTPRangeRequest, redirects: Int, _ s: inout State, _ effects: inout Effects) {
        let route = configuration.transport.route(for: request.url)
        let usesURLSession = !route.pausesDownloads
        // With no room, URLSession could be asked for nothing; the reader's next read resumes.
        guard let buffer = s.buffer, !usesURLSession || buffer.freeCount > 0 else { return }
        var request = request
        request.validator = s.pinnedVersion?.ifRangeValue
        // URLSession cannot pause, so it is asked for no more than fits.
        request.end = usesURLSession ? request.first + Int64(buffer.freeCount) : nil
        if let end = request.end, let length = s.knownLength { request.end = min(end, length) }
        s.nextTransferID += 1
        let id = s.nextTransferID
        let object: any HTTPTransfer
        switch route {
        case .own(let trust):
            object = SocketHTTPTransfer(id: id, request: request, requestTimeout: configuration.requestTimeout,
                                        idleTimeout: configuration.idleTimeout, minimumSpeed: configuration.minimumSpeed,
                                        trust: trust, sink: self)
        case .urlSession:
            object = URLSessionHTTPTransfer(id: id, request: request, requestTimeout: configuration.requestTimeout,
                                            idleTimeout: configuration.idleTimeout, minimumSpeed: configuration.minimumSpeed, sink: self)
        }
        s.transfer = ActiveTransfer(id: id, object: object, request: request, usesURLSession: usesURLSession, redirects: redirects)
        s.lastRequestURL = request.url
        s.lastTransferUsedURLSession = usesURLSession
        s.statistics.requests += 1
        effects.start.append(object)
    }

    /// Starts the transfer for the bytes after the buffered ones, when one is due: none is
    /// running or waiting to reconnect, nothing failed, the blob is not complete, and there is
    /// room (for URLSession, half the buffer, so requests are not tiny).
    func resumeIfNeeded(_ s: inout State, _ effects: inout Effects) {
        guard s.isOpen, s.transfer == nil, !s.retryPending, s.failure == nil, !s.endOfData,
              let buffer = s.buffer else { return }
        if let notBefore = s.notBefore {
            let now = DispatchTime.now()
            if notBefore > now {
                // The rest of the wait, under a new token: the seek or close that got here
                // called the pending timer off.
                s.retryToken += 1
                s.retryPending = true
                effects.retry = (Double(notBefore.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9, s.retryToken)
                return
            }
            s.notBefore = nil
        }
        let usesURLSession = !configuration.transport.route(for: url).pausesDownloads
        if usesURLSession && buffer.count > 0 && buffer.freeCount < buffer.capacity / 2 { return }
        var request = HTTPRangeRequest(url: url, first: s.frontier,
                                        extraFields: configuration.headers, credentialFields: configuration.credentialHeaders)
        request.headerProvider = configuration.headerProvider
        startTransfer(request, redirects: 0, &s, &effects)
    }

    /// Stops the running transfer, if any, and releases a thread waiting for room. A buffer
    /// lent to its receive is left to it (that receive may still be writing), and the source
    /// goes on with a copy of the bytes held, or with an empty buffer when the caller drops
    /// them anyway (`keepingBuffered` false: a seek, a close): no later transfer ever writes
    /// where the cancelled receive does.
    func cancelTransfer(_ s: inout State, _ effects: inout Effects, keepingBuffered: Bool = true) {
        guard let transfer = s.transfer else { return }
        effects.cancel.append(transfer.object)
        if let semaphore = transfer.spaceWaiter { effects.signal.append(semaphore) }
        s.transfer = nil
        guard let buffer = s.buffer, buffer.isLent else { return }
        s.buffer = keepingBuffered ? buffer.copyHeldBytes() : ReadAheadBuffer(capacity: buffer.capacity)
    }

    /// Calls the waiting reader back.
    func wakeReader(_ s: inout State, _ effects: inout Effects) {
        if let waiter = s.waiter { effects.wake.append(waiter) }
        s.waiter = nil
    }

    /// Ends reading at the download frontier with `error` (the bytes before it stay readable),
    /// or fails the pending open.
    func fail(_ error: BlobStreamError, _ s: inout State, _ effects: inout Effects) {
        cancelTransfer(&s, &effects)
        s.failure = error
        if let completion = s.pendingOpen {
            effects.open = (completion, .failure(error))
            s.pendingOpen = nil
        }
        wakeReader(&s, &effects)
    }

    /// Whether a failure now (other than one too slow) would be retried by ``retryOrFail(_:_:_:)``.
    func retriesRemain(_ s: State) -> Bool {
        Self.attempts(after: .connection(reason: ""), s) <= configuration.maxRetries
    }

    /// The attempts counted once `failure` is: every failure in a row since the last progress,
    /// or every one too slow since the open or seek, whichever are more.
    private static func attempts(after failure: HTTPTransferFailure, _ s: State) -> Int {
        let slow = if case .tooSlow = failure { 1 } else { 0 }
        return max(s.consecutiveFailures + 1, s.slowFailures + slow)
    }

    /// Schedules a reconnect at the frontier after a retryable failure, or gives up with it.
    func retryOrFail(_ failure: HTTPTransferFailure, _ s: inout State, _ effects: inout Effects) {
        let attempts = Self.attempts(after: failure, s)
        s.consecutiveFailures += 1
        if case .tooSlow = failure { s.slowFailures += 1 }
        guard attempts <= configuration.maxRetries else {
            fail(error(for: failure, at: s.frontier, attempts: attempts, in: s), &s, &effects)
            return
        }
        s.retryToken += 1
        s.retryPending = true
        var delay = min(configuration.retryDelay * pow(2, Double(s.consecutiveFailures - 1)), 30)
        if case .status(_, let retryAfter?) = failure { delay = max(delay, retryAfter) }
        effects.retry = (delay, s.retryToken)
        s.notBefore = .now() + delay
        if configuration.retryObserver != nil {
            effects.retryNotice = Retry(
                error: error(for: failure, at: s.frontier, attempts: 1, in: s), attempt: attempts + 1,
                attempts: configuration.maxRetries + 1, delay: delay)
        }
    }

    func retryTimerFired(token: Int) {
        transition { s, effects in
            guard s.retryPending, s.retryToken == token else { return }
            s.retryPending = false
            let before = s.statistics.requests
            resumeIfNeeded(&s, &effects)
            if s.statistics.requests > before { s.statistics.reconnects += 1 }
        }
    }

    /// The typed error for a transfer failure at `offset`; after a redirect it names where the
    /// failed request went too (without its query, which may be a signature).
    func error(for failure: HTTPTransferFailure, at offset: Int64, attempts: Int, in s: State) -> BlobStreamError {
        let tries = attempts > 1 ? " (\(attempts) attempts)" : ""
        let place = redirection(in: s)
        switch failure {
        case .timedOut(let operation, let seconds), .tooSlow(let operation, let seconds):
            return .timedOut(resource: resourceName, operation: "\(operation) at offset \(offset)\(place)\(tries)", seconds: seconds)
        case .connection(let reason):
            return .network(url: resourceName, reason: "\(reason), at offset \(offset)\(place)\(tries)")
        case .protocolViolation(let reason):
            return .protocolViolation(url: resourceName, reason: "\(reason), at offset \(offset)\(place)")
        case .unusable(let reason):
            return .sourceFailed(resource: resourceName, reason: "\(reason), at offset \(offset)\(place)")
        case .status(let code, _):
            return .httpStatus(url: statusResource(in: s), statusCode: code)
        }
    }

    /// The `url` a status error names: the resource, and where the request that got the status
    /// was redirected to, if it was (``redirection(in:)``).
    func statusResource(in s: State) -> String { resourceName + redirection(in: s) }

    /// `, redirected to URL` when the latest request went elsewhere than ``url`` (without its
    /// query, which may be a signature, nor its credentials); else nothing.
    func redirection(in s: State) -> String {
        guard let asked = s.lastRequestURL, asked != url, var shown = URLComponents(url: asked, resolvingAgainstBaseURL: false) else {
            return ""
        }
        (shown.query, shown.fragment, shown.user, shown.password) = (nil, nil, nil, nil)
        return ", redirected to \(shown.string ?? asked.absoluteString)"
    }
}
