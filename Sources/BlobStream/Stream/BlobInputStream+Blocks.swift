import Foundation

/// Taking whole blocks without a copy, and waking an asynchronous waiter: what ``BlobChunks``
/// and the async ``BlobInputStream/read(into:isolation:)`` are built on.
extension BlobInputStream {
    /// What a take found.
    enum BlockTake {
        /// The cached block, now owned by the chunk.
        case chunk(BlobChunk)
        /// The real end of data: every byte has been taken.
        case end
        /// The stream failed, or was closed, or was never opened.
        case failed(BlobStreamError)
        /// Nothing yet: the stream is opening, or a refill is running or waiting for its source.
        /// The observer hears when to try again.
        case wait
    }

    /// Takes the cached block of an asynchronous stream as a chunk, handing its memory over
    /// rather than copying it, and starts the refill of the next block on the work queue, so
    /// the source reads it while the consumer works on this one. When the cache is empty and
    /// that refill is still queued, runs it on this thread instead of waiting for the queue.
    /// Never waits for the source.
    func takeBlock() -> BlockTake {
        readerLock.lock()
        defer { readerLock.unlock() }
        lock.lock()
        var ranQueuedRefill = false
        while true {
            if let answer = blockTakeRefusal() {
                lock.unlock()
                return answer
            }
            if cache.count > 0 { break }
            lock.unlock()
            guard !ranQueuedRefill, runQueuedRefillHere() else { return .wait }
            ranQueuedRefill = true
            lock.lock()
        }
        let pool = chunkPool ?? ChunkBufferPool(blockSize: cache.storage.count)
        chunkPool = pool
        let offset = state.offset
        let replacement = pool.take()
        let storage: ChunkStorage
        if let handed = cache.exchange(for: replacement) {
            storage = ChunkStorage(block: handed.block, count: handed.count, pool: pool)
        } else {
            // Someone read part of the block with `read`: the rest is copied.
            storage = ChunkStorage(block: replacement, count: cache.take(into: replacement), pool: pool)
        }
        _ = consume(storage.count)
        let needsRefill = cache.count == 0 && state.isReadable && !state.refillPending
        if needsRefill { state.refillPending = true }
        lock.unlock()
        if needsRefill { scheduleRefill() }
        return .chunk(BlobChunk(offset: offset, storage: storage))
    }

    /// Runs the refill queued on the work queue here, if no thread has started it yet; returns
    /// whether it did. A reader that would otherwise wait for it gets its bytes without a thread
    /// switch. Lock not held.
    func runQueuedRefillHere() -> Bool {
        let mine = lock.withLock { () -> Bool in
            guard state.queuedRefill != nil else { return false }
            state.queuedRefill = nil
            return true
        }
        if mine { refill() }
        return mine
    }

    /// The answer to a take that cannot proceed, or `nil` when it can. Lock held.
    private func blockTakeRefusal() -> BlockTake? {
        switch state.status {
        case .open: return nil
        case .opening: return .wait
        case .atEnd: return .end
        case .error: return .failed(state.error ?? .closed)
        case .closed: return .failed(.closed)
        default: return .failed(.notOpen)
        }
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
