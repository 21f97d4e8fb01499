import Foundation

/// Reopening a source that went stale, without ever mixing two versions of the blob.
extension StreamMachine {
    /// Starts a reopen after the source went stale: the offset to open it at (the source is
    /// closed first), or the error that ends the stream when it went stale too often.
    mutating func beginReopen(maxReopens: Int, _ effects: inout StreamEffects) -> Result<Int64, BlobStreamError> {
        consecutiveReopens += 1
        if consecutiveReopens > maxReopens {
            return .failure(.invalidatedTooOften(resource: resource, offset: sourceOffset, attempts: consecutiveReopens))
        }
        source.isOpen = false
        reopen = .running
        generation += 1
        if refill == .running { refill = .awaitingReopen }
        source.callsInFlight += 1
        effects.closeSource(final: false)
        return .success(offset)
    }

    mutating func reopenCompleted(_ result: Result<BlobSourceDescription, BlobStreamError>, _ effects: inout StreamEffects) {
        // At the end (a seek there while the reopen ran), the reopen still completes: a seek
        // back refills from the reopened source.
        guard reopen == .running, isReadable || phase == .atEnd else {
            if case .success = result { effects.closeSource(final: phase.isClosed) }
            return
        }
        var failure: BlobStreamError?
        switch result {
        case .failure(let error):
            failure = error
        case .success(let reopened):
            if let reason = Self.mismatch(between: description, and: reopened) {
                failure = .sourceChanged(resource: resource, offset: sourceOffset, reason: reason)
                // Open on a version the stream will never read: close it now (or when the
                // call in flight ends), not only if someone calls close() on the stream.
                if source.callsInFlight > 0 {
                    source.closeDeferred = true
                } else {
                    effects.closeSource(final: false)
                }
            } else {
                source.isOpen = true
            }
        }
        reopen = failure.map(Reopen.failed) ?? .idle
        effects.wake = true
        guard mode == .asynchronous else { return }
        if let failure {
            refill = .idle
            fail(failure, &effects)
        } else if phase == .atEnd {
            refill = .idle
        } else {
            queueRefill(&effects)
        }
    }

    /// Where the source is being read: past the bytes a synchronous read already took from the
    /// cache, else at the consumer's offset. Errors of a reopen name it.
    var sourceOffset: Int64 { syncRead?.readOffset ?? offset }

    /// The synchronous reader's view of the reopen it waited for: its error, if it failed.
    mutating func takeReopenFailure() -> BlobStreamError? {
        guard case .failed(let error) = reopen else { return nil }
        reopen = .idle
        return error
    }

    /// A byte of progress: the source is no longer going stale in a row.
    mutating func madeProgress() {
        consecutiveReopens = 0
    }

    /// Why a reopened source is not the blob the first open described, or `nil`. The length
    /// must be the same (known or unknown alike). A version token known at the first open must
    /// come back unchanged: a reopen that no longer names one (an HTTP answer without its ETag)
    /// cannot prove it is the same blob, so it counts as a change.
    static func mismatch(between first: BlobSourceDescription?, and now: BlobSourceDescription) -> String? {
        guard let first else { return nil }
        if first.length != now.length {
            let describe = { (length: Int64?) in length.map { "\($0) bytes" } ?? "unknown length" }
            return "the length was \(describe(first.length)) and is now \(describe(now.length))"
        }
        if let before = first.version, before != now.version {
            let after = now.version.map { "\"\($0)\"" } ?? "unknown"
            return "the version was \"\(before)\" and is now \(after)"
        }
        return nil
    }
}
