import BlobStream
import Foundation

/// A ``TusUpload`` with a journal (``TusUploadOptions/journal``): it continues the upload the
/// journal has for its source and endpoint when the source is still that version and the
/// server still has it, and records a new one.
extension TusUpload {
    /// Opens the journal once the source's version is pinned (a source without one is not
    /// journaled).
    func openJournal() {
        guard journal == nil else { return }
        journal = UploadJournalSession(
            journal: options.journal, source: source, sourceVersion: reader.pin.pinned, length: length,
            destination: client.endpoint.absoluteString, notify: { [emit] in emit(.journal($0)) })
    }

    /// Continues the journal's upload of this source, from the offset the server reports;
    /// else (none, another version, gone, a mismatch) creates a new one.
    func continueJournaledOrCreate() async throws(BlobUploadError) {
        guard let journal, let entry = journal.lookup() else { return try await createUpload() }
        guard options.continuesJournaledUpload else {
            let upload = if case .tus(let url) = entry.upload { url.absoluteString } else { "\(entry.upload)" }
            journal.startOver(from: upload, reason: "a new upload was asked for")
            return try await createUpload()
        }
        guard case .tus(let url) = entry.upload else {
            journal.startOver(from: "\(entry.upload)", reason: "the journal entry is not of a tus upload")
            return try await createUpload()
        }
        if let reason = reader.pin.refusal(ofRecorded: entry.sourceVersion)
            ?? (entry.length == length ? nil : "the source has \(length.map(String.init) ?? "?") bytes, the upload \(entry.length)") {
            journal.startOver(from: url.absoluteString, reason: reason)
            return try await createUpload()
        }
        uploadURL = url
        journal.report(.found(upload: url.absoluteString))
        do throws(BlobUploadError) {
            let status = try await serverStatus()
            if let recorded = status.metadata[Self.sourceVersionKey], let refusal = reader.pin.refusal(ofRecorded: recorded) {
                throw .source(.sourceChanged(resource: source.name, offset: status.offset, reason: refusal))
            }
            try await continueUpload(at: url, status: status)
        } catch {
            guard let reason = Self.reasonToStartOver(error) else { throw error }
            uploadURL = nil
            journal.startOver(from: url.absoluteString, reason: reason)
            return try await createUpload()
        }
        journal.report(.resuming(upload: url.absoluteString, offset: offset))
    }

    /// Why the journal's upload cannot be continued after `error`, if that is what it says: the
    /// server forgot it, or it is of another blob. Other failures (the network, the server)
    /// fail this run and leave the entry for the next.
    static func reasonToStartOver(_ error: BlobUploadError) -> String? {
        switch error {
        case .uploadGone(_, let status):
            return "the server no longer has it (\(status))"
        case .lengthMismatch(_, let serverLength, let sourceLength):
            return "the server's upload has \(serverLength.map(String.init) ?? "no") length, the source \(sourceLength) bytes"
        case .filenameMismatch(_, let uploadFilename, let sourceFilename):
            return "the server's upload is of \(uploadFilename), not \(sourceFilename)"
        case .source(.sourceChanged(_, _, let reason)):
            return reason
        default:
            return nil
        }
    }
}
