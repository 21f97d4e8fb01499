import Foundation

/// Everything a ``BlobInputStream`` knows about its progress; guarded by the stream's lock.
/// A class, not a struct: the hot read path reads many fields, and each computed property of
/// a struct stored in a class would copy the whole struct first (measured with callgrind).
final class StreamState {
    var status: Stream.Status = .notOpen
    /// The error that ended the stream (status `.error`).
    var error: BlobStreamError?
    /// The reason the last read returned -1 without ending the stream (read before open, after
    /// close, or with nothing available in asynchronous mode). Cleared by the next good read.
    var transientError: BlobStreamError?
    /// What the source reported at the first open; later opens must match it.
    var description: BlobSourceDescription?
    /// Where the blob ends: the length the source announced, or, for a source that could not
    /// announce one, the offset where it answered `.end`. Once known, a seek past it is refused
    /// and a later pass that ends sooner is an unexpected end.
    var knownLength: Int64?
    /// The offset of the next byte the consumer gets.
    var offset: Int64 = 0
    /// Whether the source is open and must be closed.
    var sourceIsOpen = false
    /// Source calls (open, read) running right now; `close()` defers closing the source to the
    /// last of them, so the source is never closed under a running call.
    var sourceCallsInFlight = 0
    /// `close()` ran while a source call was in flight.
    var sourceCloseDeferred = false
    /// Set by a source's `whenReadable` callback; reset before each read that may wait on it.
    var sourceSignalled = false
    /// The block size fixed at open.
    var blockSize = 0
    /// Asynchronous mode: a refill is running or waiting for the source.
    var refillPending = false
    /// Asynchronous mode: the ticket of the refill queued on the work queue and not started yet,
    /// which a reader that finds the cache empty may run itself instead of waiting for a thread.
    var queuedRefill: Int?
    /// The last ticket handed out.
    var refillTickets = 0
    /// Asynchronous mode: the refill stopped at `wouldBlock` and waits for `whenReadable`.
    var awaitingSignal = false
    /// A reopen after invalidation has started and its completion has not arrived.
    var reopening = false
    /// Why the last reopen failed, for the synchronous reader waiting on it.
    var reopenError: BlobStreamError?
    /// Bumped by every seek and reopen, so that work started before it is recognised as stale.
    var generation = 0
    /// Invalidations in a row without a byte of progress.
    var consecutiveReopens = 0

    /// Whether the consumer has taken every byte: the status says so, never a guess.
    var isAtRealEnd: Bool { status == .atEnd }

    /// Whether reads may proceed.
    var isReadable: Bool { status == .open || status == .reading }

    /// The bytes left when the length is known.
    var remaining: Int64? { knownLength.map { $0 - offset } }
}
