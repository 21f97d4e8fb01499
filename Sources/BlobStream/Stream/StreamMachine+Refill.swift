import Foundation

/// The asynchronous mode: reads that take what the refill cached, the refill that reads ahead
/// without waiting, taking whole blocks for ``BlobChunks``, and seeking (both modes).
extension StreamMachine {
    /// What the refill does next.
    enum RefillStep {
        /// Stop: the cache is full, the stream ended or failed, or the refill is parked.
        case stop
        /// Call the source's `read(into:at:)` (counted as a call in flight), then ``refillReturned``.
        case read(UnsafeMutableRawBufferPointer, at: Int64, generation: Int)
        /// Call `confirmUnchanged(at:)` (counted), then ``refillConfirmed``.
        case confirm(at: Int64, Confirmed, generation: Int)
        /// The source went stale: reopen it (its completion resumes the refill).
        case reopen
        /// Take the next step.
        case next
    }

    /// What a take of a whole block found.
    enum BlockTake {
        case chunk(BlobChunk)
        /// The real end of data: every byte has been taken.
        case end
        /// The stream failed, or was closed, or was never opened.
        case failed(BlobStreamError)
        /// Nothing yet: the stream is opening, or a refill is running or waiting for its source.
        case wait
    }

    /// A read in asynchronous mode: copies cached bytes, never waits. Returns the count (-1
    /// with ``error`` set) and whether the caller must now run the refill itself.
    mutating func readCached(into destination: UnsafeMutableRawBufferPointer, _ effects: inout StreamEffects) -> (count: Int, refill: Bool) {
        if let early = refuseRead() { return (early, false) }
        guard cache.count > 0 else {
            transientError = .wouldBlock(offset: offset)
            return (-1, false)
        }
        let count = consume(cache.take(into: destination), &effects)
        if readsOnDemand {
            // The next read fills, into its own buffer: nothing is read ahead to be copied.
            if isReadable { effects.post(.hasBytesAvailable) }
            return (count, false)
        }
        return (count, startRefillIfDry())
    }

    /// Takes the cached block as a chunk, handing its memory over rather than copying it, and
    /// queues the refill of the next block: on the work queue, unless the consumer of an
    /// immediate source keeps claiming it first (``ChunkRefillDispatch``).
    mutating func takeBlock(_ effects: inout StreamEffects) -> BlockTake {
        switch phase {
        case .open: break
        case .opening: return .wait
        case .atEnd: return .end
        case .failed(let error): return .failed(error)
        case .closed: return .failed(.closed)
        default: return .failed(.notOpen)
        }
        guard cache.count > 0 else {
            // A reader that fills on demand left the cache empty and nothing running: the
            // consumer that finds nothing claims the refill at once (`untilProgress`).
            if readsOnDemand, refill == .idle { queueRefill(&effects, sending: false) }
            return .wait
        }
        let pool = chunkPool ?? ChunkBufferPool(blockSize: cache.storage.count)
        chunkPool = pool
        let start = offset
        let replacement = pool.take()
        let storage: ChunkStorage
        if let handed = cache.exchange(for: replacement) {
            storage = ChunkStorage(block: handed.block, count: handed.count, pool: pool)
        } else {
            // Someone read part of the block with `read`: the rest is copied.
            storage = ChunkStorage(block: replacement, count: cache.take(into: replacement), pool: pool)
        }
        _ = consume(storage.count, &effects)
        if cache.count == 0, isReadable, refill == .idle {
            queueRefill(&effects, sending: !readsOnDemand || chunkRefills.sendsNext())
        }
        return .chunk(BlobChunk(offset: start, storage: storage))
    }

    /// Claims the queued refill (`ticket`, or whichever is queued when `nil`) for the caller to
    /// run: a reader that would otherwise wait for the work queue gets its bytes at once.
    /// `ticket` is the work queue's; `nil`, a reader's.
    mutating func claimQueuedRefill(_ ticket: Int?) -> Bool {
        guard case .queued(let queued) = refill, ticket == nil || ticket == queued else { return false }
        refill = .running
        if ticket == nil { chunkRefills.consumerClaimed() } else { chunkRefills.workQueueRan() }
        return true
    }

    /// The refill's next source read, into the empty cache.
    mutating func nextRefillStep() -> RefillStep {
        guard isReadable, refill == .running else {
            if refill == .running { refill = .idle }
            return .stop
        }
        let region = cache.fillRegion(limit: remaining)
        refillTarget = .cache
        sourceSignalled = false
        beginSourceCall()
        return .read(region, at: offset, generation: generation)
    }

    /// The source answered the refill's read of `region` at `readOffset`.
    mutating func refillReturned(
        _ result: BlobSourceReadResult, region: UnsafeMutableRawBufferPointer, at readOffset: Int64,
        generation started: Int, _ effects: inout StreamEffects
    ) -> RefillStep {
        endSourceCall(&effects)
        // A seek or reopen meanwhile: read again where the stream is now.
        guard isReadable, refill == .running, started == generation else { return .next }
        switch result {
        case .read(let count):
            if let error = validate(count, of: region, at: readOffset) ?? pastLearnedEnd(count, at: readOffset) {
                return failRefill(error, &effects)
            }
            if endIsKnown, let length = knownLength, readOffset + Int64(count) == length {
                beginSourceCall()
                return .confirm(at: length, .bytes(count), generation: started)
            }
            return filled(count, &effects)
        case .end:
            if let error = unexpectedEnd(at: readOffset) { return failRefill(error, &effects) }
            beginSourceCall()
            return .confirm(at: readOffset, .end, generation: started)
        case .wouldBlock:
            if sourceSignalled { return .next }
            refill = .parked
            return .stop
        case .invalidated:
            return .reopen
        case .failed(let error):
            return failRefill(error, &effects)
        }
    }

    /// The source answered the refill's confirmation of what it read.
    mutating func refillConfirmed(
        _ error: BlobStreamError?, _ confirmed: Confirmed, generation started: Int, _ effects: inout StreamEffects
    ) -> RefillStep {
        endSourceCall(&effects)
        guard isReadable, refill == .running, started == generation else { return .next }
        if let error { return failRefill(error, &effects) }
        switch confirmed {
        case .bytes(let count):
            return filled(count, &effects)
        case .end:
            refill = .idle
            enterEnd(&effects)
            return .stop
        }
    }

    /// The reopen the refill asked for could not start (the source went stale too often).
    mutating func refillReopenRefused(_ error: BlobStreamError, _ effects: inout StreamEffects) {
        _ = failRefill(error, &effects)
    }

    private mutating func filled(_ count: Int, _ effects: inout StreamEffects) -> RefillStep {
        consecutiveReopens = 0
        refill = .idle
        switch refillTarget {
        case .cache:
            cache.didFill(count)
            effects.post(.hasBytesAvailable)
        case .reader:
            // The reader that ran this refill hands the bytes over (``endReaderFill``).
            readerFill = (count, generation)
        }
        return .stop
    }

    private mutating func failRefill(_ error: BlobStreamError, _ effects: inout StreamEffects) -> RefillStep {
        refill = .idle
        fail(error, &effects)
        return .stop
    }

    /// After a read that emptied the cache: whether the caller starts the refill now.
    private mutating func startRefillIfDry() -> Bool {
        guard cache.count == 0, isReadable, refill == .idle else { return false }
        refill = .running
        return true
    }

    // MARK: Seeking

    /// Moves to `newOffset`: before the open, where the first read starts; after it, a seek.
    /// Returns why it was refused, or `nil` once done.
    mutating func seek(to newOffset: Int64, _ effects: inout StreamEffects) -> BlobStreamError? {
        switch phase {
        case .notOpen, .opening:
            offset = newOffset
            return nil
        case .open, .atEnd:
            if let length = knownLength, newOffset > length {
                return .invalidOffset(resource: resource, offset: newOffset, length: length)
            }
            // Already there: the pass has ended and said so once.
            if phase == .atEnd, newOffset == offset { return nil }
            cache.discard()
            offset = newOffset
            // A new pass: an end found by an earlier one is confirmed by the source again.
            if lengthLearned { endConfirmed = false }
            generation += 1
            phase = .open
            announceReadability(&effects)
            // The parked refill waits for a wake-up that concerns the old offset and may never
            // come: read at the new one now. A late wake-up finds nothing parked.
            if refill == .parked { queueRefill(&effects) }
            return nil
        case .failed(let error):
            return error
        case .reading, .closed:
            return .closed
        }
    }
}
