import BlobStream
import Foundation

/// An ``S3UploadRun`` with a journal (``S3UploadOptions/journal``): it continues the multipart
/// upload the journal has for its source and key when the source is still that version and the
/// server still has the upload, and records a new one and its parts as they are confirmed.
extension S3UploadRun {
    /// The journal of a multipart upload of `source`, once `reader` pinned its version (live
    /// data and sources without a version are not journaled).
    func openJournal(source: UploadSource, reader: S3PartReader) -> UploadJournalSession? {
        guard !source.isLive else { return nil }
        return UploadJournalSession(
            journal: options.journal, source: source, sourceVersion: reader.version, length: reader.length,
            destination: "s3://\(wire.bucket)/\(key) at \(wire.origin)", notify: { [events] in events.send(.journal($0)) })
    }

    /// The upload to continue and its part list — `resumedID` when given, else the journal's
    /// when it can be continued, with the part size the journal recorded for it — and the parts
    /// the journal recorded as confirmed.
    func resumption(
        of resumedID: String?, journal: UploadJournalSession?, reader: S3PartReader
    ) throws(S3Error) -> (
        upload: (id: String, listing: S3Answers.PartListing, partSize: Int?)?,
        journaled: [Int: UploadJournalPart]
    ) {
        if let resumedID {
            // Listed first: a mistyped or gone id fails here and leaves the journal's upload be.
            let listing = try listParts(uploadID: resumedID)
            // The journal's upload of this source, if another, is continued by nothing now; if
            // this one, its records of confirmed parts still vouch for them (of the same version).
            var journaled: [Int: UploadJournalPart] = [:]
            if let journal, let entry = journal.lookup() {
                if !entry.isS3Upload(resumedID) {
                    abandon(entry, journal: journal, reason: "upload \(resumedID) is continued instead")
                } else if case .s3(let upload) = entry.upload, reader.refusal(ofRecorded: entry.sourceVersion) == nil,
                          entry.length == reader.length {
                    journaled = Dictionary(upload.parts.map { ($0.number, $0) }, uniquingKeysWith: { $1 })
                }
            }
            return ((resumedID, listing, nil), journaled)
        }
        guard let journal, let found = try journaledUpload(journal, reader: reader) else { return (nil, [:]) }
        return ((found.upload.uploadID, found.listing, found.upload.partSize),
                Dictionary(found.upload.parts.map { ($0.number, $0) }, uniquingKeysWith: { $1 }))
    }

    /// The checksum algorithm the parts carry, as the journal records it.
    var journaledAlgorithm: String? { options.sendsChecksums ? options.checksum.s3Name : nil }

    /// The checksum type the upload is created with (S3's `ChecksumType`): `FULL_OBJECT` or
    /// `COMPOSITE`; `nil` without checksums. Completing with another type fails every time.
    var checksumType: String? { options.isFullObject ? "FULL_OBJECT" : options.sendsChecksums ? "COMPOSITE" : nil }

    /// The journal's upload of this source and its part list, when it can be continued; `nil`
    /// (the entry removed, and the upload aborted when it is of another version, length or
    /// checksum) when it cannot.
    private func journaledUpload(
        _ journal: UploadJournalSession, reader: S3PartReader
    ) throws(S3Error) -> (upload: UploadJournalS3Upload, listing: S3Answers.PartListing)? {
        guard let entry = journal.lookup() else { return nil }
        guard options.continuesJournaledUpload else {
            abandon(entry, journal: journal, reason: "a new upload was asked for")
            return nil
        }
        guard case .s3(let upload) = entry.upload else {
            journal.startOver(from: "\(entry.upload)", reason: "the journal entry is not of an S3 upload")
            return nil
        }
        let reason = reader.refusal(ofRecorded: entry.sourceVersion)
            ?? (entry.length == reader.length ? nil : "the source has \(reader.length.map(String.init) ?? "?") bytes, the upload \(entry.length)")
            ?? (upload.checksumAlgorithm == journaledAlgorithm ? nil
                : "its parts carry \(upload.checksumAlgorithm ?? "no") checksums, this upload \(journaledAlgorithm ?? "none")")
            // Recorded since the field exists (older entries are judged by the listing alone).
            ?? (upload.checksumType.map { $0 == checksumType } ?? true ? nil
                : "its checksum is \(upload.checksumType ?? "none"), this upload's \(checksumType ?? "none")")
        if let reason {
            abandon(entry, journal: journal, reason: reason)
            return nil
        }
        journal.report(.found(upload: upload.uploadID))
        do throws(S3Error) {
            let listing = try listParts(uploadID: upload.uploadID)
            journal.report(.resuming(upload: upload.uploadID, offset: listing.parts.reduce(0) { $0 + $1.size }))
            return (upload, listing)
        } catch .uploadGone {
            journal.startOver(from: upload.uploadID, reason: "the server no longer has it (NoSuchUpload)")
            return nil
        }
    }

    /// Removes the journal's entry of `source` to this key, if any, aborting its multipart
    /// upload, for `reason` (an object stored whole after all).
    func abandonJournaled(source: UploadSource, reader: S3PartReader, reason: String) {
        guard let journal = openJournal(source: source, reader: reader), let entry = journal.lookup() else { return }
        abandon(entry, journal: journal, reason: reason)
    }

    /// Removes the journal's `entry`, which nothing will continue for `reason`, aborting its
    /// multipart upload (its parts would be billed until then), and says so.
    private func abandon(_ entry: UploadJournalEntry, journal: UploadJournalSession, reason: String) {
        guard case .s3(let upload) = entry.upload else {
            return journal.startOver(from: "\(entry.upload)", reason: reason)
        }
        let aborted = abort(upload.uploadID).map { "; aborting it failed (\($0)): `blobstream s3 abort` can" } ?? "; it was aborted"
        journal.startOver(from: upload.uploadID, reason: reason + aborted)
    }

    /// Aborts `uploadID`: `nil` once the server confirmed it (or no longer had it), else why not.
    private func abort(_ uploadID: String) -> String? {
        let call = S3Call(operation: "AbortMultipartUpload", method: "DELETE", key: key, query: [("uploadId", uploadID)], uploadID: uploadID)
        do throws(S3Error) {
            let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
            if (200..<300).contains(answer.statusCode) || answer.statusCode == 404 { return nil }
            return "HTTP \(answer.statusCode)"
        } catch {
            return "\(error)"
        }
    }
}

extension UploadJournalEntry {
    /// Whether the entry records the multipart upload `uploadID`.
    fileprivate func isS3Upload(_ uploadID: String) -> Bool {
        if case .s3(let upload) = upload { return upload.uploadID == uploadID }
        return false
    }
}
