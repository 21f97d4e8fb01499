import Foundation

/// Taking whole blocks without a copy, and waking an asynchronous waiter: what ``BlobChunks``
/// and the async ``BlobInputStream/read(into:isolation:)`` are built on.
extension BlobInputStream {
    /// Takes the cached block of an asynchronous stream as a chunk, handing its memory over
    /// rather than copying it, and starts the refill of the next block on the work queue, so
    /// the source reads it while the consumer works on this one (a consumer of an immediate
    /// source that keeps coming back first reads it itself: ``ChunkRefillDispatch``). Never
    /// waits for the source.
    func takeBlock() -> StreamMachine.BlockTake {
        transition { machine, effects in machine.takeBlock(&effects) }
    }

    /// Runs the refill queued on the work queue here, if no thread has started it yet; returns
    /// whether it did. A reader that would otherwise wait for it gets its bytes without a thread
    /// switch. Lock not held.
    func runQueuedRefillHere() -> Bool {
        refill(.queued(nil))
    }

    /// Sets the one observer that hears, on any thread, of every event and of `close()`.
    func observeChanges(_ observer: (@Sendable () -> Void)?) {
        dispatcher.observe(observer)
    }

    /// For blob-bench: hears, just before each `hasBytesAvailable` reaches the delegate, how
    /// many nanoseconds ago it was posted. Set before `open()`.
    package var eventLatencyProbe: (@Sendable (UInt64) -> Void)? {
        get { dispatcher.latencyProbe }
        set { dispatcher.latencyProbe = newValue }
    }
}
