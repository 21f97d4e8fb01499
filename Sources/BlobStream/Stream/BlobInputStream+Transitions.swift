import Foundation

/// How the stream runs its ``StreamMachine``: a transition under its lock, its effects
/// after it, source calls without it, and the wait.
extension BlobInputStream {
    /// Runs `body` on the machine with the lock held, then carries out its effects.
    func transition<T>(_ body: (inout StreamMachine, inout StreamEffects) -> T) -> T {
        lock.lock()
        var effects = StreamEffects()
        let result = body(&machine, &effects)
        commit(effects)
        lock.unlock()
        perform(effects)
        return result
    }

    /// The effects that must happen before the lock is released. Lock held.
    func commit(_ effects: StreamEffects) {
        effects.events.forEach { dispatcher.post($0) }
        if effects.closeIsPending { SourceOwnership.closeIsPending(dataSource, by: sourceTenant) }
    }

    /// The effects that run without the lock.
    func perform(_ effects: StreamEffects) {
        // After the unlock: a thread woken while the lock is held would preempt this one only
        // to block on the lock, two context switches for each wake.
        if effects.wake { lock.broadcast() }
        if effects.stopEvents {
            dispatcher.removeAll()
            dispatcher.notifyObserver()
        }
        if let final = effects.closeSource { closeSource(final: final) }
        if let ticket = effects.scheduleRefill {
            let stream = WeakReference(self)
            workQueue.async { stream.object?.refill(.queued(ticket)) }
        }
    }

    /// Inside a longer run with the lock held: commits `effects`, carries out the rest with the
    /// lock released for that moment, and starts `effects` afresh.
    func settle(_ effects: inout StreamEffects) {
        commit(effects)
        if effects.hasUnlockedWork {
            lock.unlock()
            perform(effects)
            lock.lock()
        } else if effects.wake {
            lock.broadcast()
        }
        effects = StreamEffects()
    }

    /// How the stream calls its source: without the lock (held on entry and on return),
    /// the machine having counted the call as in flight when it asked for it; then hands the
    /// answer to the machine, whose effects are settled before this returns.
    func withSourceCall<Answer, Next>(
        _ call: () -> Answer,
        then answer: (Answer, inout StreamMachine, inout StreamEffects) -> Next
    ) -> Next {
        lock.unlock()
        let result = call()
        lock.lock()
        var effects = StreamEffects()
        let next = answer(result, &machine, &effects)
        settle(&effects)
        return next
    }

    /// The wait: with the lock held, until `done` holds or `deadline` (if any) passes;
    /// returns whether `done` holds. (`NSCondition.wait(until: .distantFuture)` traps on Linux.)
    @discardableResult
    func wait(until deadline: Date? = nil, for done: (borrowing StreamMachine) -> Bool) -> Bool {
        while !done(machine) {
            guard let deadline else {
                lock.wait()
                continue
            }
            if !lock.wait(until: deadline) { return done(machine) }
        }
        return true
    }

    /// Takes the reader's turn: one synchronous read or seek at a time, so two never share the
    /// cache. Lock held.
    func enterReader() {
        let thread = Turn.currentThread
        wait { $0.reader.admits(thread) }
        machine.reader.enter(thread)
    }

    /// Gives the reader's turn back. Lock held.
    func leaveReader() {
        if machine.reader.leave() { lock.broadcast() }
    }

    /// Closes the source on the stream's behalf. A timed-out open, a late open completion and
    /// `close()` may each close it from their own thread; the source sees one close at a time,
    /// as its contract promises (a source may complete a pending open from inside `close`, and
    /// that completion may close it again on the same thread), and only while it is still this
    /// stream's: once another stream has opened it, a late close leaves it alone
    /// (``SourceOwnership``). A `final` close (the stream is closed) gives the source up, and a
    /// new stream's open that waited for it runs. Never called with the lock held.
    func closeSource(final: Bool) {
        SourceOwnership.close(dataSource, by: sourceTenant, final: final) {
            let thread = Turn.currentThread
            lock.lock()
            wait { $0.sourceCloser.admits(thread) }
            machine.sourceCloser.enter(thread)
            lock.unlock()
            dataSource.close()
            lock.lock()
            if machine.sourceCloser.leave() { lock.broadcast() }
            lock.unlock()
        }
    }

    /// Waits, with the lock held, until `done` holds, the stream closes, or the open timeout
    /// passes; refuses to wait at all when the source says waiting would deadlock.
    func waitForSource(operation: String, until done: (borrowing StreamMachine) -> Bool) -> BlobStreamError? {
        if let reason = dataSource.reasonWaitingWouldDeadlock() {
            return .wouldDeadlock(resource: dataSource.resourceName, reason: reason)
        }
        let timeout = configuredOpenTimeout
        if wait(until: Date(timeIntervalSinceNow: timeout), for: { done($0) || $0.phase.isClosed }) {
            return done(machine) ? nil : .closed
        }
        return machine.phase.isClosed
            ? .closed
            : .timedOut(resource: dataSource.resourceName, operation: operation, seconds: timeout)
    }

    /// Closes the stale source and opens it again at `offset`, after a `beginReopen` whose
    /// `effects` ask for that close. Lock held on entry and on return; the reopen's completion
    /// arrives through `reopenCompleted`.
    func reopenSource(at offset: Int64, _ effects: inout StreamEffects) {
        settle(&effects)
        let stream = WeakReference(self)
        withSourceCall({
            dataSource.open(at: offset) { result in
                stream.object?.transition { machine, effects in machine.reopenCompleted(result, &effects) }
            }
        }, then: { _, machine, effects in machine.endSourceCall(&effects) })
    }
}
