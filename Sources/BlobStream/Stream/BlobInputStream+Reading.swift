import Foundation

/// Reading: the synchronous path that waits for its source, and the asynchronous path that
/// serves bytes a background refill has cached.
extension BlobInputStream {
    // MARK: Synchronous

    func readSynchronously(into destination: UnsafeMutableRawBufferPointer) -> Int {
        readerLock.lock()
        defer { readerLock.unlock() }
        lock.lock()
        defer { lock.unlock() }
        if let early = refuseRead() { return early }
        state.status = .reading
        defer { if state.status == .reading { state.status = .open } }

        // Bytes this call has already copied into `destination`; they count once it returns.
        var delivered = 0
        while true {
            // Every pass may follow a wait, during which `close()` (or a failure) may have
            // landed together with the source's wake-up: never touch a source that is closed.
            guard state.status == .reading else { return refuseRead() ?? -1 }
            if cache.count > 0 {
                delivered += cache.take(into: rest(of: destination, after: delivered))
                if delivered == destination.count { return consume(delivered) }
            }
            let readOffset = state.offset + Int64(delivered)
            let remaining = state.knownLength.map { $0 - readOffset }
            if let remaining, remaining <= 0 { return consume(delivered) }
            // The source gets a whole block at a time, as its contract promises, unless the blob
            // ends sooner. A read with room for a block takes it without a copy; a smaller one is
            // served from a cached block, topped up when the cache runs dry part way, so that a
            // read just under the block size (libcurl asks for 65,524 bytes) is never cut short
            // by the few bytes the previous one left in the cache.
            let room = rest(of: destination, after: delivered)
            let direct = room.count >= state.blockSize || remaining.map { Int64(room.count) >= $0 } == true
            let region = direct ? limited(room, to: remaining) : cache.fillRegion(limit: remaining)
            let result = readSource(into: region, at: readOffset, whenReadable: signalReader)
            guard state.status == .reading else { return refuseRead() ?? -1 }

            switch result {
            case .read(let count):
                if let error = validate(count, of: region, at: readOffset) { return failRead(error) }
                state.consecutiveReopens = 0
                if let length = state.knownLength, readOffset + Int64(count) == length {
                    if let error = confirmSource(at: length) { return failRead(error) }
                    guard state.status == .reading else { return refuseRead() ?? -1 }
                }
                if direct { return consume(delivered + count) }
                cache.didFill(count)
            case .end:
                if let error = unexpectedEnd(at: readOffset) { return failRead(error) }
                if let error = confirmSource(at: readOffset) { return failRead(error) }
                guard state.status == .reading else { return refuseRead() ?? -1 }
                state.knownLength = readOffset
                return consume(delivered)
            case .wouldBlock:
                // Bytes in hand are worth more than a wait for more.
                if delivered > 0 { return consume(delivered) }
                if let error = waitForSignal() { return failRead(error) }
            case .invalidated:
                if let error = reopenWhileReading() { return failRead(error) }
            case .failed(let error):
                return failRead(error)
            }
        }
    }

    func sourceSignalledSynchronousReader() {
        lock.lock()
        state.sourceSignalled = true
        lock.broadcast()
        lock.unlock()
    }

    /// Waits for the source's `whenReadable`. Lock held. A wake-up says nothing about the
    /// status: the caller checks it again before it calls the source.
    private func waitForSignal() -> BlobStreamError? {
        if state.sourceSignalled { return nil }
        if let reason = dataSource.reasonWaitingWouldDeadlock() {
            return .wouldDeadlock(resource: dataSource.resourceName, reason: reason)
        }
        let timeout = configuredReadTimeout
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !state.sourceSignalled {
            if state.status != .reading { return .closed }
            if !lock.wait(until: deadline) && !state.sourceSignalled {
                return state.status == .reading
                    ? .timedOut(resource: dataSource.resourceName, operation: "read at offset \(state.offset)", seconds: timeout)
                    : .closed
            }
        }
        return nil
    }

    /// Reopens the stale source and waits for it. Lock held.
    private func reopenWhileReading() -> BlobStreamError? {
        if let error = beginReopen() { return error }
        if let error = waitForSource(operation: "reopen", until: { !$0.reopening }) { return error }
        if state.status != .reading { return .closed }
        return state.reopenError
    }

    /// Ends the read with `error`: the stream fails, unless it was closed meanwhile. Lock held.
    private func failRead(_ error: BlobStreamError) -> Int {
        if state.status == .closed {
            state.transientError = .closed
        } else {
            fail(error)
        }
        return -1
    }

    // MARK: Asynchronous

    func readAsynchronously(into destination: UnsafeMutableRawBufferPointer) -> Int {
        readerLock.lock()
        defer { readerLock.unlock() }
        lock.lock()
        if let early = refuseRead() {
            lock.unlock()
            return early
        }
        guard cache.count > 0 else {
            state.transientError = .wouldBlock(offset: state.offset)
            lock.unlock()
            return -1
        }
        let count = consume(cache.take(into: destination))
        let needsRefill = cache.count == 0 && state.isReadable && !state.refillPending
        if needsRefill { state.refillPending = true }
        lock.unlock()
        if needsRefill { refill() }
        return count
    }

    /// Runs a refill on the stream's work queue, off whatever thread called back; a reader that
    /// finds the cache empty before the queue has started it runs it itself (see
    /// ``takeBlock()``). Never called with the lock held.
    func scheduleRefill() {
        let ticket = lock.withLock { () -> Int in
            state.refillTickets &+= 1
            state.queuedRefill = state.refillTickets
            return state.refillTickets
        }
        let stream = WeakReference(self)
        workQueue.async { stream.object?.runQueuedRefill(ticket) }
    }

    /// Runs the refill queued with `ticket`, unless a reader took it over or a later one replaced it.
    private func runQueuedRefill(_ ticket: Int) {
        let mine = lock.withLock { () -> Bool in
            guard state.queuedRefill == ticket else { return false }
            state.queuedRefill = nil
            return true
        }
        if mine { refill() }
    }

    /// Fills the empty cache from the source without waiting; `state.refillPending` is set.
    /// Answers `wouldBlock` by parking until the source calls back, and invalidation by
    /// reopening; neither blocks a thread.
    func refill() {
        lock.lock()
        defer { lock.unlock() }
        while true {
            guard state.isReadable, state.refillPending, !state.reopening else {
                if !state.reopening { state.refillPending = false }
                return
            }
            let region = cache.fillRegion(limit: state.remaining)
            let readOffset = state.offset
            let generation = state.generation
            let result = readSource(into: region, at: readOffset, whenReadable: signalRefill)
            guard state.isReadable, generation == state.generation else { continue }

            switch result {
            case .read(let count):
                if let error = validate(count, of: region, at: readOffset) { return failRefill(error) }
                if let length = state.knownLength, readOffset + Int64(count) == length {
                    let error = confirmSource(at: length)
                    guard state.isReadable, generation == state.generation else { continue }
                    if let error { return failRefill(error) }
                }
                state.consecutiveReopens = 0
                state.refillPending = false
                cache.didFill(count)
                dispatcher.post(.hasBytesAvailable)
                return
            case .end:
                if let error = unexpectedEnd(at: readOffset) { return failRefill(error) }
                let error = confirmSource(at: readOffset)
                guard state.isReadable, generation == state.generation else { continue }
                state.refillPending = false
                if let error { return failRefill(error) }
                enterEnd()
                return
            case .wouldBlock:
                if state.sourceSignalled { continue }
                state.awaitingSignal = true
                return
            case .invalidated:
                if let error = beginReopen() { return failRefill(error) }
                return  // sourceDidReopen schedules the next refill
            case .failed(let error):
                return failRefill(error)
            }
        }
    }

    func sourceSignalledRefill() {
        lock.lock()
        state.sourceSignalled = true
        let resume = state.awaitingSignal
        state.awaitingSignal = false
        lock.unlock()
        if resume { scheduleRefill() }
    }

    private func failRefill(_ error: BlobStreamError) {
        state.refillPending = false
        fail(error)
    }

    // MARK: Shared

    /// Calls the source's `read` without the lock (held on entry and on return), counted as a
    /// call in flight so a concurrent `close()` waits for it, and with the wake-up flag reset
    /// first so a `whenReadable` that fires during the call is not lost.
    private func readSource(
        into region: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        state.sourceSignalled = false
        state.sourceCallsInFlight += 1
        lock.unlock()
        let result = dataSource.read(into: region, at: offset, whenReadable: whenReadable)
        lock.lock()
        endSourceCall()
        return result
    }

    /// Asks the source whether the blob is still the version it opened, now that the last byte
    /// has come from it and before that byte or the end reaches the consumer. Called like
    /// ``readSource(into:at:whenReadable:)``: without the lock, counted as a call in flight.
    /// The caller checks the status again afterwards.
    private func confirmSource(at offset: Int64) -> BlobStreamError? {
        state.sourceCallsInFlight += 1
        lock.unlock()
        let error = dataSource.confirmUnchanged(at: offset)
        lock.lock()
        endSourceCall()
        return error
    }

    /// The answer to a read that cannot proceed, or `nil` when it can. Lock held.
    private func refuseRead() -> Int? {
        switch state.status {
        case .open: return nil
        case .atEnd: return 0
        case .error: return -1
        case .closed:
            state.transientError = .closed
            return -1
        default:
            state.transientError = .notOpen
            return -1
        }
    }

    /// Accounts for `count` bytes handed to the consumer and announces what follows. Lock held.
    func consume(_ count: Int) -> Int {
        state.offset += Int64(count)
        state.transientError = nil
        if cache.count == 0, let remaining = state.remaining, remaining <= 0 {
            enterEnd()
        } else if mode == .synchronous || cache.count > 0 {
            dispatcher.post(.hasBytesAvailable)
        }
        return count
    }

    /// The part of `destination` after its first `count` bytes.
    private func rest(of destination: UnsafeMutableRawBufferPointer, after count: Int) -> UnsafeMutableRawBufferPointer {
        count == 0 ? destination : UnsafeMutableRawBufferPointer(rebasing: destination[count...])
    }

    /// `buffer`, shortened to `remaining` bytes when it is known and fewer.
    private func limited(_ buffer: UnsafeMutableRawBufferPointer, to remaining: Int64?) -> UnsafeMutableRawBufferPointer {
        guard let remaining, remaining < Int64(buffer.count) else { return buffer }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(remaining)])
    }

    /// The error for a count the source cannot have read into `region` at `offset`, if it is one.
    private func validate(_ count: Int, of region: UnsafeMutableRawBufferPointer, at offset: Int64) -> BlobStreamError? {
        guard count <= 0 || count > region.count else { return nil }
        return .sourceFailed(
            resource: dataSource.resourceName,
            reason: "the data source reported \(count) bytes read into a buffer of \(region.count) at offset \(offset)")
    }

    /// The error for an end of data before the announced length, if it is one.
    private func unexpectedEnd(at offset: Int64) -> BlobStreamError? {
        guard let length = state.knownLength, offset < length else { return nil }
        return .unexpectedEnd(resource: dataSource.resourceName, offset: offset, expectedLength: length)
    }
}
