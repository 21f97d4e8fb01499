internal import SystemCalls

/// One upload's use of an ``UploadJournal``: its key, its entry as last written, and the rule
/// that the journal never fails the upload — a failure is reported once, and the upload goes on
/// without it. Thread-safe: an S3 upload's parts are confirmed on several threads.
final class UploadJournalSession: Sendable {
    let journal: any UploadJournal
    let key: UploadJournalKey
    let sourceVersion: String
    let length: Int64
    private let notify: @Sendable (UploadJournalNotice) -> Void

    private struct State {
        /// Whether the journal failed: it is not touched again.
        var disabled = false
        /// The entry to write, and how many changes it has had.
        var entry: UploadJournalEntry?
        var revision = 0
    }

    private let state = LockedValue(State())
    /// Serializes writes; `written` is the revision on disk, so a writer that waited finds its
    /// change already written by the one before it and skips the write.
    private let writing = LockedValue(0)

    /// A session for `source` of `sourceVersion` and `length`, going to
    /// `destination`; `nil` without a journal or a version (such a source cannot be told apart
    /// from a changed one later).
    init?(journal: (any UploadJournal)?, source: UploadSource, sourceVersion: String?, length: Int64?, destination: String,
          notify: @escaping @Sendable (UploadJournalNotice) -> Void) {
        guard let journal, let sourceVersion, let length else { return nil }
        self.journal = journal
        key = UploadJournalKey(sourceName: source.path ?? source.name, isPath: source.path != nil, destination: destination)
        self.sourceVersion = sourceVersion
        self.length = length
        self.notify = notify
    }

    /// The journal's entry for this upload, if it has one; a damaged one is reported and
    /// counts as none.
    func lookup() -> UploadJournalEntry? {
        guard !isDisabled else { return nil }
        do throws(UploadJournalError) {
            return try journal.entry(for: key)
        } catch {
            report(error)
            return nil
        }
    }

    /// Writes a new entry for `upload`.
    func start(_ upload: UploadJournalEntry.Upload) {
        update { entry in
            entry = UploadJournalEntry(key: key, sourceVersion: sourceVersion, length: length, upload: upload)
        }
    }

    /// Records an S3 part the server confirmed (replacing an earlier record of its number).
    func confirm(_ part: UploadJournalPart) {
        update { entry in
            guard case .s3(var upload)? = entry?.upload else { return }
            upload.parts.removeAll { $0.number == part.number }
            upload.parts.append(part)
            upload.parts.sort { $0.number < $1.number }
            entry?.upload = .s3(upload: upload)
        }
    }

    /// Removes the entry: the upload is done, or cannot be continued.
    func remove() {
        state.withLock { $0.entry = nil }
        guard !isDisabled else { return }
        do throws(UploadJournalError) {
            try writing.withLock { _ throws(UploadJournalError) in try journal.remove(key) }
        } catch {
            report(error)
        }
    }

    /// Removes the entry of `upload`, which is not continued for `reason`, and says so.
    func startOver(from upload: String, reason: String) {
        remove()
        notify(.startingOver(upload: upload, reason: reason))
    }

    /// Reports `notice` with the upload's events.
    func report(_ notice: UploadJournalNotice) {
        notify(notice)
    }

    private var isDisabled: Bool { state.withLock { $0.disabled } }

    /// Changes the entry and writes it, unless a later writer already wrote a later revision.
    private func update(_ change: (inout UploadJournalEntry?) -> Void) {
        let revision = state.withLock { state -> Int? in
            guard !state.disabled else { return nil }
            change(&state.entry)
            state.entry?.updated = .now
            state.revision += 1
            return state.revision
        }
        guard let revision else { return }
        do throws(UploadJournalError) {
            try writing.withLock { written throws(UploadJournalError) in
                guard written < revision else { return }
                let (entry, current) = state.withLock { ($0.entry, $0.revision) }
                guard let entry else { return }
                try journal.record(entry)
                written = current
            }
        } catch {
            report(error)
        }
    }

    /// Reports a failure: a damaged file each time, an unusable journal once, after which the
    /// journal is left alone.
    private func report(_ error: UploadJournalError) {
        if case .damaged = error {
            notify(.damaged(error))
            return
        }
        let first = state.withLock { state -> Bool in
            defer { state.disabled = true }
            return !state.disabled
        }
        if first { notify(.unavailable(error)) }
    }
}
