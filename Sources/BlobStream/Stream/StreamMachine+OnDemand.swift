import Foundation

/// Asynchronous reads of an immediate source (``BlobDataSource/readsImmediately``, a file):
/// reading ahead into the cache would only add a copy, since the source never waits. So the
/// reader runs the refill itself when it finds the cache empty, straight into its own buffer
/// when that has room for a block (else into the cache, then copied), and `hasBytesAvailable`
/// stays on while the stream is readable: a read finds bytes without waiting. The first block
/// after an open or a seek is still read ahead, and so are the blocks ``BlobChunks`` takes,
/// unless its consumer keeps reading them first (``ChunkRefillDispatch``).
extension StreamMachine {
    /// What an asynchronous read does.
    enum AsynchronousRead {
        /// Return this count (-1 with ``StreamMachine/error`` set); with `refill`, the caller
        /// first runs the refill the read started (read ahead for the next one).
        case finish(Int, refill: Bool)
        /// Run the refill from this step (counted as running, its source call as in flight),
        /// then ``endReaderFill(into:_:)`` says what the read returns.
        case fill(RefillStep)
    }

    /// Whether reads fill on demand rather than the refill reading ahead.
    var readsOnDemand: Bool { immediateSource && mode == .asynchronous }

    /// Whether a read now would fill on demand (and so find bytes without waiting).
    var fillsOnDemandNow: Bool { readsOnDemand && phase == .open && refill == .idle }

    /// An asynchronous read: takes cached bytes, or, on demand, fills first.
    mutating func beginAsynchronousRead(into destination: UnsafeMutableRawBufferPointer, _ effects: inout StreamEffects) -> AsynchronousRead {
        guard cache.count == 0, fillsOnDemandNow else {
            let (count, refill) = readCached(into: destination, &effects)
            return .finish(count, refill: refill)
        }
        refill = .running
        readerFill = nil
        let direct = destination.count >= blockSize || remaining.map { Int64(destination.count) >= $0 } == true
        refillTarget = direct ? .reader : .cache
        let region = direct ? Self.limited(destination, to: remaining) : cache.fillRegion(limit: remaining)
        sourceSignalled = false
        beginSourceCall()
        return .fill(.read(region, at: offset, generation: generation))
    }

    /// The refill a read ran has stopped: hands over what it read into the reader's buffer, if
    /// the stream is still where it was read, else serves the cache as any read does.
    mutating func endReaderFill(into destination: UnsafeMutableRawBufferPointer, _ effects: inout StreamEffects) -> Int {
        let fill = readerFill
        readerFill = nil
        if let early = refuseRead() { return early }
        if let fill, fill.generation == generation {
            let count = consume(fill.count, &effects)
            if isReadable { effects.post(.hasBytesAvailable) }
            return count
        }
        return readCached(into: destination, &effects).count
    }
}
