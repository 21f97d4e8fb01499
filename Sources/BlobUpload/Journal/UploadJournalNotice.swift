/// What an upload's journal did, reported with the upload's events
/// (``TusUploadEvent/journal(_:)``, ``S3UploadEvent/journal(_:)``) so that a command can say it.
public enum UploadJournalNotice: Sendable, Hashable {
    /// The journal has an upload of this source to this destination: `upload` (a tus upload
    /// URL, an S3 upload id) is asked for its state next (a tus `HEAD`, S3's `ListParts`).
    /// ``resuming(upload:offset:)`` or ``startingOver(upload:reason:)`` follows, or the upload
    /// fails with the server's answer; starting afresh (``TusUploadOptions/continuesJournaledUpload``
    /// false, the command line's `--no-resume`) leaves it aside.
    case found(upload: String)
    /// The journal had this upload: `upload` (a tus upload URL, an S3 upload id) is continued
    /// from `offset`, the bytes the server has (for S3, the parts it lists, each still checked
    /// against the source before it is kept).
    case resuming(upload: String, offset: Int64)
    /// The journal's entry for this source and destination was not continued, for `reason`
    /// (the source changed since, the server no longer has the upload, another length or
    /// checksum): it was removed and a new upload starts. An S3 upload so left is aborted.
    case startingOver(upload: String, reason: String)
    /// The journal cannot be used (reported once per upload): the upload goes on, but a later
    /// run cannot continue it by itself.
    case unavailable(UploadJournalError)
    /// A journal file that could not be trusted was set aside; the upload starts afresh.
    case damaged(UploadJournalError)
}
