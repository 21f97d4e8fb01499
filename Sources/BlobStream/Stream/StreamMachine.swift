import Foundation

/// The state of one ``BlobInputStream``, as a value whose `mutating` methods decide what
/// happens next and return it as ``StreamEffects``, which the stream carries out after its lock
/// is released (events are queued before, so their order is the order of the transitions).
/// Nothing here calls the source, waits, or touches a thread, so every transition can be
/// tested on its own (see `StreamMachineTests`). The stream guards the value with its one lock.
///
/// The machine is a phase (``Phase``) plus named sub-states: the source's use (``SourceUse``),
/// the asynchronous refill (``Refill``), a reopen after invalidation (``Reopen``), and the
/// turns that let one reader, one delegate delivery and one source close run at a time.
/// `~Copyable`, because it owns the cache's memory, and so that reading a field never copies
/// the whole state.
struct StreamMachine: ~Copyable {
    /// Where the stream is in its life; ``status`` is what Foundation sees of it.
    enum Phase: Equatable, Sendable {
        case notOpen
        /// Waiting for the source (and, before that, for another stream's close of it).
        case opening
        case open
        /// A synchronous read is under way.
        case reading
        /// The consumer has taken every byte.
        case atEnd
        case failed(BlobStreamError)
        /// Closed; keeps the error that ended the stream before, which it still reports.
        case closed(failure: BlobStreamError?)

        var isClosed: Bool {
            if case .closed = self { return true }
            return false
        }
    }

    /// The asynchronous mode's one read ahead, which fills the empty cache.
    enum Refill: Equatable, Sendable {
        case idle
        /// Scheduled on the work queue and not started: a reader that needs it may run it itself.
        case queued(ticket: Int)
        case running
        /// The source answered `wouldBlock`; its `whenReadable` resumes the refill.
        case parked
        /// The source went stale; the reopen's completion resumes the refill.
        case awaitingReopen
    }

    /// Where a refill's source read goes.
    enum RefillTarget: Equatable, Sendable {
        case cache
        /// The buffer of the asynchronous reader that runs the refill itself.
        case reader
    }

    /// A reopen after the source went stale.
    enum Reopen: Equatable, Sendable {
        case idle
        /// The source is being opened again; its completion has not arrived.
        case running
        /// The reopen failed; the synchronous reader that waited for it reports this.
        case failed(BlobStreamError)
    }

    /// The stream's use of its source.
    struct SourceUse {
        /// The source is open and must be closed.
        var isOpen = false
        /// Source calls (open, read, confirm) running now: the source is never closed under one.
        var callsInFlight = 0
        /// `close()` (or a reopen on another version) ran during a call; the last call closes it.
        var closeDeferred = false
    }

    let mode: BlobInputStream.Mode
    /// The source's resource name, for errors.
    let resource: String
    /// The source's reads are immediate (``BlobDataSource/readsImmediately``): in asynchronous
    /// mode the reader fills on demand, straight into its own buffer when it has room for a
    /// block, instead of the cache being refilled ahead (see `StreamMachine+OnDemand.swift`).
    let immediateSource: Bool

    var phase: Phase = .notOpen
    /// Why the last read returned -1 without ending the stream. Cleared by the next good read.
    var transientError: BlobStreamError?
    /// What the source reported at the first open; later opens must match it.
    var description: BlobSourceDescription?
    /// Where the blob ends: announced, or found where a pass met the end.
    var knownLength: Int64?
    /// ``knownLength`` was found by a pass, not announced: a later pass (after a seek back)
    /// reads until the source says where it ends again, and an end elsewhere fails, shorter or
    /// longer (a pseudo file, or a chunked answer, may change without a version to show it).
    var lengthLearned = false
    /// The source confirmed the end at ``knownLength`` in this pass (always, for an announced
    /// length): only then is ``remaining`` counted from it.
    var endConfirmed = true
    /// The offset of the next byte the consumer gets.
    var offset: Int64 = 0
    /// The block size fixed at open.
    var blockSize = 0
    var cache = BlockCache(capacity: 0)
    /// Where the blocks ``BlobChunks`` takes come from; made at the first take.
    var chunkPool: ChunkBufferPool?
    var source = SourceUse()
    /// The source's `whenReadable` fired since the last source read.
    var sourceSignalled = false
    var refill = Refill.idle
    /// Where the running refill's source read goes: the cache, or the buffer of the reader that
    /// runs it (on demand, see `StreamMachine+OnDemand.swift`).
    var refillTarget = RefillTarget.cache
    /// What a refill into the reader's buffer brought: the count, for the generation it was read in.
    var readerFill: (count: Int, generation: Int)?
    var refillTickets = 0
    /// Whether ``BlobChunks``' refills of an immediate source go to the work queue.
    var chunkRefills = ChunkRefillDispatch()
    var reopen = Reopen.idle
    /// Bumped by every seek and reopen, so that work started before it is recognised as stale.
    var generation = 0
    /// Invalidations in a row without a byte of progress.
    var consecutiveReopens = 0
    /// The synchronous read in progress (see `StreamMachine+Reading.swift`).
    var syncRead: SynchronousRead?
    /// One reader (or seek) at a time, so two never share the cache.
    var reader = Turn()
    /// One delegate delivery at a time; `close()` waits for one in progress.
    var delivery = Turn()
    /// One close of the source at a time, as its contract promises.
    var sourceCloser = Turn()

    init(mode: BlobInputStream.Mode, resource: String, immediateSource: Bool = false) {
        self.mode = mode
        self.resource = resource
        self.immediateSource = immediateSource
    }

    // MARK: Reading the state

    var status: Stream.Status {
        switch phase {
        case .notOpen: return .notOpen
        case .opening: return .opening
        case .open: return .open
        case .reading: return .reading
        case .atEnd: return .atEnd
        case .failed: return .error
        case .closed: return .closed
        }
    }

    /// The error that ended the stream, else the reason the last read failed.
    var error: BlobStreamError? {
        switch phase {
        case .failed(let error), .closed(failure: let error?): return error
        default: return transientError
        }
    }

    /// Whether reads may proceed.
    var isReadable: Bool { phase == .open || phase == .reading }

    /// The bytes left when the length is known: announced, or confirmed by the source in this
    /// pass. Reads are bounded by it, and the end is entered at it.
    var remaining: Int64? { endIsKnown ? knownLength.map { $0 - offset } : nil }

    /// Whether ``knownLength`` is where this pass ends: announced, or confirmed in this pass.
    /// Otherwise the source's own end is met (and confirmed there) before it counts.
    var endIsKnown: Bool { !lengthLearned || endConfirmed }

    /// Whether the source must be closed when the stream is freed.
    var holdsSource: Bool { source.isOpen || phase == .opening }

    // MARK: Opening

    /// `open()`: starts opening, unless the stream was ever opened.
    mutating func open(blockSize: Int) -> Bool {
        guard phase == .notOpen else { return false }
        phase = .opening
        self.blockSize = blockSize
        cache = BlockCache(capacity: blockSize)
        return true
    }

    /// The source is this stream's: the offset to open it at, or `nil` when the stream stopped
    /// opening meanwhile (then it gives the source up).
    mutating func startOpenCall() -> Int64? {
        guard phase == .opening else { return nil }
        source.callsInFlight += 1
        return offset
    }

    /// A synchronous `open()` stopped waiting with `error` (closed, timed out, would deadlock).
    mutating func openWaitFailed(_ error: BlobStreamError, _ effects: inout StreamEffects) {
        // A `close()` that ended the wait has closed the source itself.
        let closedMeanwhile = phase.isClosed
        fail(error, &effects)
        if !closedMeanwhile { effects.closeSource(final: false) }
    }

    mutating func openCompleted(_ result: Result<BlobSourceDescription, BlobStreamError>, _ effects: inout StreamEffects) {
        guard phase == .opening else {
            // Closed, timed out or refused while opening: the source must not stay open.
            if case .success = result { effects.closeSource(final: phase.isClosed) }
            return
        }
        switch result {
        case .failure(let error):
            fail(error, &effects)
        case .success(let opened):
            if let length = opened.length, offset > length {
                fail(.invalidOffset(resource: resource, offset: offset, length: length), &effects)
                effects.closeSource(final: false)
                return
            }
            description = opened
            knownLength = opened.length
            (lengthLearned, endConfirmed) = (false, true)
            source.isOpen = true
            phase = .open
            effects.post(.openCompleted)
            announceReadability(&effects)
            effects.wake = true
        }
    }

    /// After an open or a seek: enters the end, or says bytes are there (synchronous mode), or
    /// starts the refill that finds them (asynchronous mode).
    mutating func announceReadability(_ effects: inout StreamEffects) {
        if let remaining, remaining <= 0 {
            enterEnd(&effects)
            return
        }
        switch mode {
        case .synchronous: effects.post(.hasBytesAvailable)
        case .asynchronous: if refill == .idle { queueRefill(&effects) }
        }
    }

    // MARK: Source calls

    /// Counts a source call as running, so a `close()` meanwhile defers the source's close.
    mutating func beginSourceCall() {
        source.callsInFlight += 1
    }

    /// Ends a source call; closes the source if `close()` ran meanwhile.
    mutating func endSourceCall(_ effects: inout StreamEffects) {
        source.callsInFlight -= 1
        guard source.callsInFlight == 0, source.closeDeferred else { return }
        source.closeDeferred = false
        effects.closeSource(final: phase.isClosed)
    }

    /// The source's `whenReadable` fired: wakes the synchronous reader, or resumes the parked refill.
    mutating func sourceSignalled(_ effects: inout StreamEffects) {
        sourceSignalled = true
        switch mode {
        case .synchronous: effects.wake = true
        case .asynchronous: if refill == .parked { queueRefill(&effects) }
        }
    }

    /// Resets the wake-up flag before a source read, so a `whenReadable` during it is not lost.
    mutating func forgetSignal() {
        sourceSignalled = false
    }

    // MARK: Closing

    /// `close()`: stops events and closes the source now, or when the call in flight returns.
    mutating func close(_ effects: inout StreamEffects) {
        switch phase {
        case .notOpen, .closed: return
        case .failed(let error): phase = .closed(failure: error)
        default: phase = .closed(failure: nil)
        }
        if source.callsInFlight == 0 {
            effects.closeSource(final: true)
        } else {
            source.closeDeferred = true
            // Until that close, a new stream's open of the source waits for it.
            effects.closeIsPending = true
        }
        source.isOpen = false
        reopen = .idle
        effects.wake = true
        effects.stopEvents = true
    }

    // MARK: Terminal states

    /// Ends the stream with `error` and tells the delegate.
    mutating func fail(_ error: BlobStreamError, _ effects: inout StreamEffects) {
        switch phase {
        case .closed, .failed: return
        default: break
        }
        phase = .failed(error)
        effects.post(.errorOccurred)
        effects.wake = true
    }

    /// Marks the real end of data and tells the delegate.
    mutating func enterEnd(_ effects: inout StreamEffects) {
        guard phase != .atEnd else { return }
        if knownLength == nil {
            knownLength = offset
            lengthLearned = true
        }
        endConfirmed = true
        phase = .atEnd
        effects.post(.endEncountered)
    }

    // MARK: Internal moves shared by the extensions

    /// Queues a refill under a new ticket, replacing any queued one, and sends it to the work
    /// queue unless `sending` is false (then the reader that queued it claims it).
    mutating func queueRefill(_ effects: inout StreamEffects, sending: Bool = true) {
        refillTickets &+= 1
        refill = .queued(ticket: refillTickets)
        if sending { effects.scheduleRefill = refillTickets }
    }

}
