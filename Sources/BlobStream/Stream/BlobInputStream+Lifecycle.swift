import Foundation

/// Opening, reopening after invalidation, and closing.
extension BlobInputStream {
    func openStream() {
        lock.lock()
        guard state.status == .notOpen else {
            lock.unlock()
            return
        }
        state.status = .opening
        state.blockSize = configuredBlockSize
        cache = BlockCache(capacity: configuredBlockSize)
        lock.unlock()

        // Another stream may still be closing this source: the open waits for that close.
        let stream = WeakReference(self)
        SourceOwnership.open(dataSource, by: sourceTenant) { stream.object?.startOpen() }

        lock.lock()
        if mode == .synchronous && state.status == .opening {
            if let error = waitForSource(operation: "open", until: { $0.status != .opening }) {
                // A `close()` that ended the wait has closed the source itself.
                let closedMeanwhile = state.status == .closed
                fail(error)
                lock.unlock()
                if !closedMeanwhile { closeSource(final: false) }
                return
            }
        }
        lock.unlock()
    }

    /// Opens the source, once it is this stream's (see ``SourceOwnership``), unless the stream
    /// stopped opening while it waited for it.
    private func startOpen() {
        lock.lock()
        guard state.status == .opening else {
            lock.unlock()
            SourceOwnership.release(dataSource, by: sourceTenant)
            return
        }
        state.sourceCallsInFlight += 1
        let startOffset = state.offset
        lock.unlock()
        let stream = WeakReference(self)
        dataSource.open(at: startOffset) { result in stream.object?.sourceDidOpen(result) }
        lock.lock()
        endSourceCall()
        lock.unlock()
    }

    private func sourceDidOpen(_ result: Result<BlobSourceDescription, BlobStreamError>) {
        lock.lock()
        guard state.status == .opening else {
            // Closed, timed out or refused while opening: the source must not stay open.
            let final = state.status == .closed
            lock.unlock()
            if case .success = result { closeSource(final: final) }
            return
        }
        switch result {
        case .failure(let error):
            fail(error)
            lock.unlock()
        case .success(let description):
            if let length = description.length, state.offset > length {
                fail(.invalidOffset(resource: dataSource.resourceName, offset: state.offset, length: length))
                lock.unlock()
                closeSource(final: false)
                return
            }
            state.description = description
            state.knownLength = description.length
            state.sourceIsOpen = true
            state.status = .open
            dispatcher.post(.openCompleted)
            let needsRefill = announceReadability()
            lock.broadcast()
            lock.unlock()
            if needsRefill { scheduleRefill() }
        }
    }

    /// After an open or a seek: enters the end, or says bytes are there (synchronous mode), or
    /// reports that a refill must find them (asynchronous mode). Lock held.
    func announceReadability() -> Bool {
        if let remaining = state.remaining, remaining <= 0 {
            enterEnd()
            return false
        }
        switch mode {
        case .synchronous:
            dispatcher.post(.hasBytesAvailable)
            return false
        case .asynchronous:
            guard !state.refillPending else { return false }
            state.refillPending = true
            return true
        }
    }

    /// Waits, with the lock held, until `done` holds, the stream closes, or the open timeout
    /// passes; refuses to wait at all when the source says waiting would deadlock.
    func waitForSource(operation: String, until done: (StreamState) -> Bool) -> BlobStreamError? {
        if let reason = dataSource.reasonWaitingWouldDeadlock() {
            return .wouldDeadlock(resource: dataSource.resourceName, reason: reason)
        }
        let timeout = configuredOpenTimeout
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !done(state) {
            if state.status == .closed { return .closed }
            if !lock.wait(until: deadline) && !done(state) {
                return state.status == .closed
                    ? .closed
                    : .timedOut(resource: dataSource.resourceName, operation: operation, seconds: timeout)
            }
        }
        return nil
    }

    // MARK: Reopening

    /// Starts a reopen after the source went stale. Lock held; returns the error that ends the
    /// stream instead when the source went stale too often.
    func beginReopen() -> BlobStreamError? {
        state.consecutiveReopens += 1
        if state.consecutiveReopens > configuredMaxReopens {
            return .invalidatedTooOften(
                resource: dataSource.resourceName, offset: state.offset, attempts: state.consecutiveReopens)
        }
        state.sourceIsOpen = false
        state.reopening = true
        state.reopenError = nil
        state.generation += 1
        state.sourceCallsInFlight += 1
        let offset = state.offset
        lock.unlock()
        closeSource(final: false)
        let stream = WeakReference(self)
        dataSource.open(at: offset) { result in stream.object?.sourceDidReopen(result) }
        lock.lock()
        endSourceCall()
        return nil
    }

    private func sourceDidReopen(_ result: Result<BlobSourceDescription, BlobStreamError>) {
        lock.lock()
        guard state.reopening, state.isReadable else {
            let final = state.status == .closed
            lock.unlock()
            if case .success = result { closeSource(final: final) }
            return
        }
        state.reopening = false
        var closeTheOtherVersion = false
        switch result {
        case .failure(let error):
            state.reopenError = error
        case .success(let description):
            if let reason = mismatch(between: state.description, and: description) {
                state.reopenError = .sourceChanged(
                    resource: dataSource.resourceName, offset: state.offset, reason: reason)
                // Open on a version the stream will never read: close it now (or when the
                // call in flight ends), not only if someone calls close() on the stream.
                if state.sourceCallsInFlight > 0 {
                    state.sourceCloseDeferred = true
                } else {
                    closeTheOtherVersion = true
                }
            } else {
                state.sourceIsOpen = true
            }
        }
        lock.broadcast()
        if closeTheOtherVersion {
            lock.unlock()
            closeSource(final: false)
            lock.lock()
        }
        guard mode == .asynchronous else {
            lock.unlock()
            return
        }
        if let error = state.reopenError {
            state.refillPending = false
            fail(error)
            lock.unlock()
        } else {
            lock.unlock()
            scheduleRefill()
        }
    }

    /// Why a reopened source is not the blob the first open described, or `nil`. The length
    /// must be the same (known or unknown alike). A version token known at the first open must
    /// come back unchanged: a reopen that no longer names one (an HTTP answer without its ETag)
    /// cannot prove it is the same blob, so it counts as a change. A source that named no
    /// version at first has nothing to contradict.
    private func mismatch(between first: BlobSourceDescription?, and now: BlobSourceDescription) -> String? {
        guard let first else { return nil }
        if first.length != now.length {
            let describe = { (length: Int64?) in length.map { "\($0) bytes" } ?? "unknown length" }
            return "the length was \(describe(first.length)) and is now \(describe(now.length))"
        }
        if let before = first.identity, before != now.identity {
            let after = now.identity.map { "\"\($0)\"" } ?? "unknown"
            return "the version was \"\(before)\" and is now \(after)"
        }
        return nil
    }

    // MARK: Closing

    func closeStream() {
        lock.lock()
        guard state.status != .notOpen, state.status != .closed else {
            lock.unlock()
            return
        }
        state.status = .closed
        let closeNow = state.sourceCallsInFlight == 0
        if !closeNow {
            state.sourceCloseDeferred = true
            // Until that close, a new stream's open of the source waits for it.
            SourceOwnership.closeIsPending(dataSource, by: sourceTenant)
        }
        state.sourceIsOpen = false
        state.reopening = false
        lock.broadcast()
        lock.unlock()
        dispatcher.removeAll()
        dispatcher.notifyObserver()
        if closeNow { closeSource(final: true) }
        // Wait out an event being delivered right now, so none reaches the delegate after this.
        deliveryLock.lock()
        deliveryLock.unlock()
    }

    /// Closes the source on the stream's behalf. A timed-out open, a late open completion and
    /// `close()` may each close it from their own thread; the source sees one close at a time,
    /// as its contract promises, and only while it is still this stream's: once another stream
    /// has opened it, a late close leaves it alone (``SourceOwnership``). A `final` close (the
    /// stream is closed) gives the source up, and a new stream's open that waited for it runs.
    /// Never called with `lock` held.
    func closeSource(final: Bool) {
        SourceOwnership.close(dataSource, by: sourceTenant, final: final) {
            sourceCloseLock.lock()
            defer { sourceCloseLock.unlock() }
            dataSource.close()
        }
    }

    /// Ends a source call. Lock held; closes the source if `close()` ran meanwhile.
    func endSourceCall() {
        state.sourceCallsInFlight -= 1
        guard state.sourceCallsInFlight == 0, state.sourceCloseDeferred else { return }
        state.sourceCloseDeferred = false
        let final = state.status == .closed
        lock.unlock()
        closeSource(final: final)
        lock.lock()
    }

    // MARK: Terminal states

    /// Ends the stream with `error` and tells the delegate. Lock held.
    func fail(_ error: BlobStreamError) {
        guard state.status != .closed, state.status != .error else { return }
        state.status = .error
        state.error = error
        dispatcher.post(.errorOccurred)
        lock.broadcast()
    }

    /// Marks the real end of data and tells the delegate. Lock held.
    func enterEnd() {
        guard state.status != .atEnd else { return }
        if state.knownLength == nil { state.knownLength = state.offset }
        state.status = .atEnd
        dispatcher.post(.endEncountered)
    }
}
