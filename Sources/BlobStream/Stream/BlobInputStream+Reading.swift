import Foundation

/// Reading: the synchronous path that waits for its source, and the asynchronous path that
/// serves bytes a background refill has cached. ``StreamMachine`` decides every step.
extension BlobInputStream {
    // MARK: Synchronous

    func readSynchronously(into destination: UnsafeMutableRawBufferPointer) -> Int {
        lock.lock()
        defer { lock.unlock() }
        enterReader()
        defer { leaveReader() }
        if let early = machine.beginSynchronousRead(into: destination) { return early }
        defer { machine.endSynchronousRead() }
        var effects = StreamEffects()
        var step = machine.nextReadStep(&effects)
        while true {
            settle(&effects)
            let next: StreamMachine.ReadStep?
            switch step {
            case .finish(let count):
                return count
            case .read(let region, let offset):
                next = withSourceCall({ dataSource.read(into: region, at: offset, whenReadable: signalSource) },
                                      then: { result, machine, effects in machine.readReturned(result, &effects) })
            case .confirm(let offset):
                next = withSourceCall({ dataSource.confirmUnchanged(at: offset) },
                                      then: { error, machine, effects in machine.confirmReturned(error, &effects) })
            case .waitForSignal:
                next = machine.signalWaitEnded(waitForSignal(), &effects)
            case .reopen:
                next = machine.reopenWaitEnded(reopenWhileReading(), &effects)
            }
            step = next ?? machine.nextReadStep(&effects)
        }
    }

    /// Waits for the source's `whenReadable`. Lock held. A wake-up says nothing about the
    /// status: the machine checks it again before it calls the source.
    private func waitForSignal() -> BlobStreamError? {
        if machine.sourceSignalled { return nil }
        if let reason = dataSource.reasonWaitingWouldDeadlock() {
            return .wouldDeadlock(resource: dataSource.resourceName, reason: reason)
        }
        let timeout = configuredReadTimeout
        let done = wait(until: Date(timeIntervalSinceNow: timeout)) { $0.sourceSignalled || $0.phase != .reading }
        if machine.sourceSignalled { return nil }
        return done || machine.phase != .reading
            ? .closed
            : .timedOut(resource: dataSource.resourceName, operation: "read at offset \(machine.offset)", seconds: timeout)
    }

    /// Reopens the stale source and waits for it. Lock held.
    private func reopenWhileReading() -> BlobStreamError? {
        var effects = StreamEffects()
        switch machine.beginReopen(maxReopens: configuredMaxReopens, &effects) {
        case .failure(let error):
            return error
        case .success(let offset):
            reopenSource(at: offset, &effects)
            return waitForSource(operation: "reopen", until: { $0.reopen != .running })
        }
    }

    // MARK: Asynchronous

    func readAsynchronously(into destination: UnsafeMutableRawBufferPointer) -> Int {
        switch transition({ machine, effects in machine.beginAsynchronousRead(into: destination, &effects) }) {
        case .finish(let count, let mustRefill):
            if mustRefill { refill(.running) }
            return count
        case .fill(let first):
            refill(.from(first))
            return transition { machine, effects in machine.endReaderFill(into: destination, &effects) }
        }
    }

    /// How a refill run starts.
    enum RefillStart {
        /// The machine already marked the refill as running for this caller.
        case running
        /// As ``running``, with this first step already decided (a read that fills on demand).
        case from(StreamMachine.RefillStep)
        /// Claim the refill queued under this ticket (`nil`: whichever is queued) first.
        case queued(Int?)
    }

    /// Fills the empty cache from the source without waiting: answers `wouldBlock` by parking
    /// until the source calls back, and invalidation by reopening; neither blocks a thread.
    /// Returns whether it ran (a queued refill that was claimed or replaced does not).
    @discardableResult
    func refill(_ start: RefillStart) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        var step: StreamMachine.RefillStep
        switch start {
        case .running: step = machine.nextRefillStep()
        case .from(let first): step = first
        case .queued(let ticket):
            guard machine.claimQueuedRefill(ticket) else { return false }
            step = machine.nextRefillStep()
        }
        while true {
            switch step {
            case .stop:
                return true
            case .next:
                step = machine.nextRefillStep()
            case .read(let region, let offset, let generation):
                step = withSourceCall({ dataSource.read(into: region, at: offset, whenReadable: signalSource) },
                                      then: { result, machine, effects in
                    machine.refillReturned(result, region: region, at: offset, generation: generation, &effects)
                })
            case .confirm(let offset, let confirmed, let generation):
                step = withSourceCall({ dataSource.confirmUnchanged(at: offset) },
                                      then: { error, machine, effects in
                    machine.refillConfirmed(error, confirmed, generation: generation, &effects)
                })
            case .reopen:
                var effects = StreamEffects()
                switch machine.beginReopen(maxReopens: configuredMaxReopens, &effects) {
                case .failure(let error):
                    machine.refillReopenRefused(error, &effects)
                    settle(&effects)
                case .success(let offset):
                    // The reopen's completion queues the next refill.
                    reopenSource(at: offset, &effects)
                }
                return true
            }
        }
    }
}
