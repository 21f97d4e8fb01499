import Foundation

/// The synchronous read: a loop the stream drives, calling the source or waiting where a step
/// says so and handing the answer back, until a step says how the read ends.
extension StreamMachine {
    /// One synchronous read in progress.
    struct SynchronousRead {
        let destination: UnsafeMutableRawBufferPointer
        /// Bytes already copied into `destination`; they count once the read returns.
        var delivered = 0
        /// The source read in flight: where it reads, and whether straight into `destination`.
        var region = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        var readOffset: Int64 = 0
        var direct = false
        /// What the source's answer was, while its confirmation runs.
        var confirming: Confirmed?
    }

    /// What a read is waiting for the source to confirm before it hands it over.
    enum Confirmed: Equatable {
        /// The last `count` bytes of a blob of known length.
        case bytes(Int)
        /// The end of a blob of unknown length.
        case end
    }

    /// What the stream does next for a synchronous read.
    enum ReadStep {
        /// Return this count (-1 with ``StreamMachine/error`` set).
        case finish(Int)
        /// Call the source's `read(into:at:)` (counted as a call in flight).
        case read(UnsafeMutableRawBufferPointer, at: Int64)
        /// Call the source's `confirmUnchanged(at:)` (counted as a call in flight).
        case confirm(at: Int64)
        /// Wait for the source's `whenReadable`.
        case waitForSignal
        /// The source went stale: reopen it, wait for that, then ``reopenWaitEnded(_:_:)``.
        case reopen
    }

    /// Starts a synchronous read into `destination`, or says how it ends at once.
    mutating func beginSynchronousRead(into destination: UnsafeMutableRawBufferPointer) -> Int? {
        if let early = refuseRead() { return early }
        phase = .reading
        syncRead = SynchronousRead(destination: destination)
        return nil
    }

    /// The read returned: back to `.open`, unless it failed, ended or was closed meanwhile.
    mutating func endSynchronousRead() {
        syncRead = nil
        if phase == .reading { phase = .open }
    }

    /// The next step: serves cached bytes, then asks the source for a block (into the
    /// destination when it has room for one, else into the cache).
    mutating func nextReadStep(_ effects: inout StreamEffects) -> ReadStep {
        // Every step may follow a wait, during which `close()` (or a failure) may have landed
        // together with the source's wake-up: never touch a source that is closed.
        guard phase == .reading, var read = syncRead else { return .finish(refuseRead() ?? -1) }
        defer { syncRead = read }
        if cache.count > 0 {
            read.delivered += cache.take(into: Self.rest(of: read.destination, after: read.delivered))
            if read.delivered == read.destination.count { return .finish(consume(read.delivered, &effects)) }
        }
        let readOffset = offset + Int64(read.delivered)
        let left = remaining.map { $0 - Int64(read.delivered) }
        if let left, left <= 0 { return .finish(consume(read.delivered, &effects)) }
        // The source gets a whole block at a time, as its contract promises, unless the blob
        // ends sooner. A read with room for a block takes it without a copy; a smaller one is
        // served from a cached block, topped up when the cache runs dry part way, so that a
        // read just under the block size (libcurl asks for 65,524 bytes) is never cut short
        // by the few bytes the previous one left in the cache.
        let room = Self.rest(of: read.destination, after: read.delivered)
        read.direct = room.count >= blockSize || left.map { Int64(room.count) >= $0 } == true
        read.region = read.direct ? Self.limited(room, to: left) : cache.fillRegion(limit: left)
        read.readOffset = readOffset
        sourceSignalled = false
        beginSourceCall()
        return .read(read.region, at: readOffset)
    }

    /// The source answered the read of the last step; `nil`: take the next step.
    mutating func readReturned(_ result: BlobSourceReadResult, _ effects: inout StreamEffects) -> ReadStep? {
        endSourceCall(&effects)
        guard phase == .reading, var read = syncRead else { return .finish(refuseRead() ?? -1) }
        switch result {
        case .read(let count):
            if let error = validate(count, of: read.region, at: read.readOffset) ?? pastLearnedEnd(count, at: read.readOffset) {
                return failRead(error, &effects)
            }
            consecutiveReopens = 0
            if endIsKnown, let length = knownLength, read.readOffset + Int64(count) == length {
                return confirm(.bytes(count), at: length, &read)
            }
            return took(count, &effects)
        case .end:
            if let error = unexpectedEnd(at: read.readOffset) { return failRead(error, &effects) }
            return confirm(.end, at: read.readOffset, &read)
        case .wouldBlock:
            // Bytes in hand are worth more than a wait for more.
            if read.delivered > 0 { return .finish(consume(read.delivered, &effects)) }
            return .waitForSignal
        case .invalidated:
            return .reopen
        case .failed(let error):
            return failRead(error, &effects)
        }
    }

    /// The source answered the confirmation the last step asked for; `nil`: take the next step.
    mutating func confirmReturned(_ error: BlobStreamError?, _ effects: inout StreamEffects) -> ReadStep? {
        endSourceCall(&effects)
        if let error { return failRead(error, &effects) }
        guard phase == .reading, let read = syncRead, let confirmed = read.confirming else {
            return .finish(refuseRead() ?? -1)
        }
        syncRead?.confirming = nil
        switch confirmed {
        case .bytes(let count):
            return took(count, &effects)
        case .end:
            if knownLength == nil { lengthLearned = true }
            knownLength = read.readOffset
            endConfirmed = true
            return .finish(consume(read.delivered, &effects))
        }
    }

    /// The wait for `whenReadable` ended with `error` (`nil`: woken); `nil`: take the next step.
    mutating func signalWaitEnded(_ error: BlobStreamError?, _ effects: inout StreamEffects) -> ReadStep? {
        error.map { failRead($0, &effects) }
    }

    /// The wait for the reopen ended with `error` (`nil`: it completed); `nil`: take the next step.
    mutating func reopenWaitEnded(_ error: BlobStreamError?, _ effects: inout StreamEffects) -> ReadStep? {
        if let error { return failRead(error, &effects) }
        if phase != .reading { return failRead(.closed, &effects) }
        return takeReopenFailure().map { failRead($0, &effects) }
    }

    /// The read gives up with `error`: the stream fails, unless it was closed meanwhile.
    mutating func failRead(_ error: BlobStreamError, _ effects: inout StreamEffects) -> ReadStep {
        if phase.isClosed {
            transientError = .closed
        } else {
            fail(error, &effects)
        }
        return .finish(-1)
    }

    private mutating func confirm(_ confirmed: Confirmed, at offset: Int64, _ read: inout SynchronousRead) -> ReadStep {
        read.confirming = confirmed
        syncRead = read
        beginSourceCall()
        return .confirm(at: offset)
    }

    /// `count` bytes arrived in the region of the last read.
    private mutating func took(_ count: Int, _ effects: inout StreamEffects) -> ReadStep? {
        guard let read = syncRead else { return .finish(-1) }
        if read.direct { return .finish(consume(read.delivered + count, &effects)) }
        cache.didFill(count)
        return nil
    }

    // MARK: Shared by every read

    /// The answer to a read that cannot proceed, or `nil` when it can.
    mutating func refuseRead() -> Int? {
        switch phase {
        case .open: return nil
        case .atEnd: return 0
        case .failed: return -1
        case .closed:
            transientError = .closed
            return -1
        default:
            transientError = .notOpen
            return -1
        }
    }

    /// Accounts for `count` bytes handed to the consumer and announces what follows.
    mutating func consume(_ count: Int, _ effects: inout StreamEffects) -> Int {
        offset += Int64(count)
        transientError = nil
        if cache.count == 0, let remaining, remaining <= 0 {
            enterEnd(&effects)
        } else if mode == .synchronous || cache.count > 0 {
            effects.post(.hasBytesAvailable)
        }
        return count
    }

    /// The error for a count the source cannot have read into `region` at `offset`, if it is one.
    func validate(_ count: Int, of region: UnsafeMutableRawBufferPointer, at offset: Int64) -> BlobStreamError? {
        guard count <= 0 || count > region.count else { return nil }
        return .sourceFailed(
            resource: resource,
            reason: "the data source reported \(count) bytes read into a buffer of \(region.count) at offset \(offset)")
    }

    /// The error for bytes past the end an earlier pass found, if these are.
    func pastLearnedEnd(_ count: Int, at offset: Int64) -> BlobStreamError? {
        guard lengthLearned, let length = knownLength, offset + Int64(count) > length else { return nil }
        return .sourceChanged(
            resource: resource, offset: length,
            reason: "it goes on past offset \(length), where an earlier pass found its end: it changed between the passes")
    }

    /// The error for an end of data before the announced length, if it is one.
    func unexpectedEnd(at offset: Int64) -> BlobStreamError? {
        guard let length = knownLength, offset < length else { return nil }
        return .unexpectedEnd(resource: resource, offset: offset, expectedLength: length)
    }

    /// The part of `destination` after its first `count` bytes.
    static func rest(of destination: UnsafeMutableRawBufferPointer, after count: Int) -> UnsafeMutableRawBufferPointer {
        count == 0 ? destination : UnsafeMutableRawBufferPointer(rebasing: destination[count...])
    }

    /// `buffer`, shortened to `remaining` bytes when it is known and fewer.
    static func limited(_ buffer: UnsafeMutableRawBufferPointer, to remaining: Int64?) -> UnsafeMutableRawBufferPointer {
        guard let remaining, remaining < Int64(buffer.count) else { return buffer }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(remaining)])
    }
}
