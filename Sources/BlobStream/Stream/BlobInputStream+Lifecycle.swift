import Foundation

/// Opening and closing: the stream's side of ``StreamMachine``'s open and close.
extension BlobInputStream {
    func openStream() {
        let started = transition { machine, _ in machine.open(blockSize: configuredBlockSize) }
        guard started else { return }
        // Another stream may still be closing this source: the open waits for that close.
        let stream = WeakReference(self)
        SourceOwnership.open(dataSource, by: sourceTenant) { stream.object?.startOpen() }
        guard mode == .synchronous else { return }
        lock.lock()
        var effects = StreamEffects()
        if machine.phase == .opening,
           let error = waitForSource(operation: "open", until: { $0.phase != .opening }) {
            machine.openWaitFailed(error, &effects)
        }
        commit(effects)
        lock.unlock()
        perform(effects)
    }

    /// Opens the source, once it is this stream's (see ``SourceOwnership``), unless the stream
    /// stopped opening while it waited for it.
    private func startOpen() {
        lock.lock()
        defer { lock.unlock() }
        guard let offset = machine.startOpenCall() else {
            lock.unlock()
            SourceOwnership.release(dataSource, by: sourceTenant)
            lock.lock()
            return
        }
        let stream = WeakReference(self)
        withSourceCall({
            dataSource.open(at: offset) { result in
                stream.object?.transition { machine, effects in machine.openCompleted(result, &effects) }
            }
        }, then: { _, machine, effects in machine.endSourceCall(&effects) })
    }

    func closeStream() {
        let closed = transition { machine, effects in
            let before = machine.phase
            machine.close(&effects)
            return before != machine.phase
        }
        guard closed else { return }
        // Wait out an event being delivered right now on another thread, so none reaches the
        // delegate after this (a delegate that closes from its event is not waited for).
        let thread = Turn.currentThread
        lock.lock()
        wait { $0.delivery.admits(thread) }
        lock.unlock()
    }
}
