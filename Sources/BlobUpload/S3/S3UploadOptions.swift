import Foundation

/// How an ``S3Client`` uploads one object.
public struct S3UploadOptions: Sendable {
    /// S3's smallest part (all but the last part must be at least this long).
    public static let minimumPartSize = 5 * 1024 * 1024
    /// S3's largest part.
    public static let maximumPartSize = 5 * 1024 * 1024 * 1024
    /// S3's largest part count.
    public static let maximumPartCount = 10_000

    /// Bytes per part, 8 MiB by default; grown for a blob that would need more than 10,000
    /// parts. Memory is at most ``parallelParts`` × this (as grown): a resumed upload with
    /// larger parts runs fewer at once, and one whose parts exceed that is refused.
    public var partSize = 8 * 1024 * 1024
    /// Parts read and sent at the same time, 4 by default.
    public var parallelParts = 4
    /// A blob of at most this many bytes goes up in one `PutObject`; by default one part size.
    public var singlePutThreshold: Int?
    /// The checksum each part (or the single PUT) carries; CRC-32C by default.
    public var checksum = S3ChecksumAlgorithm.crc32c
    /// Whether a multipart upload declares `x-amz-checksum-type: FULL_OBJECT`: the object's
    /// checksum is then the CRC of all its bytes (combined from the parts' CRCs and sent with
    /// `CompleteMultipartUpload`) rather than S3's composite checksum of the parts' checksums.
    /// Only for ``S3ChecksumAlgorithm/crc32``, ``S3ChecksumAlgorithm/crc32c`` and
    /// ``S3ChecksumAlgorithm/crc64nvme`` (which always is: S3 allows nothing else); false by
    /// default.
    public var fullObjectChecksum = false
    /// Whether requests carry `x-amz-checksum-*` fields; true by default. Set it to false for
    /// an S3-compatible server that rejects them: every body (the single `PutObject`, each
    /// part) then carries `Content-MD5` instead, S3's original integrity check, which such
    /// servers verify (`BadDigest`); the result names no checksum, and ``fullObjectChecksum``
    /// cannot be asked for.
    public var sendsChecksums = true
    /// `Content-Type` of the object; `application/octet-stream` by default.
    public var contentType = "application/octet-stream"
    /// Attempts per request before a transient failure (`SlowDown`, 5xx, a dropped
    /// connection) fails the upload; 5 by default.
    public var maxAttempts = 5
    /// The first wait before a retry, doubled for each further one up to ``maxRetryDelay``.
    public var retryDelay: TimeInterval = 0.25
    /// The longest wait between two attempts.
    public var maxRetryDelay: TimeInterval = 8

    /// Where a multipart upload is recorded so that a later run (another process, after a
    /// crash or a reboot) continues it by itself: see ``UploadJournal``. `nil` by default:
    /// nothing is recorded, and only ``S3Client/upload(_:key:options:resuming:events:)``'s
    /// `resuming` continues.
    public var journal: (any UploadJournal)? {
        get { journalReference?.journal }
        set { journalReference = newValue.map(UploadJournalReference.init) }
    }
    /// The journal behind a reference: options holding an existential directly would be
    /// address-only, which keeps closures that capture them from being sent to a task.
    private var journalReference: UploadJournalReference?
    /// Whether the journal's upload of this source is continued (the default). `false` starts a
    /// new upload whatever the journal has, and the new one replaces its entry; the old one is
    /// reported with ``UploadJournalNotice/startingOver(upload:reason:)`` and aborted (its
    /// parts would be billed until then).
    public var continuesJournaledUpload = true

    /// Default options.
    public init() {}

    /// Whether the upload uses a full-object checksum (asked for, or implied by CRC-64/NVME).
    var isFullObject: Bool { sendsChecksums && (fullObjectChecksum || checksum == .crc64nvme) }

    /// Whether a body's MD5 must be computed while it is read: it goes out as `Content-MD5`
    /// when checksums are off.
    var sendsContentMD5: Bool { !sendsChecksums }

    /// The field that lets the server verify a body with these digests: its checksum, or its
    /// `Content-MD5` when checksums are off (the digests then hold the MD5: ``sendsContentMD5``).
    func integrityFields(_ digests: S3PartDigests) -> [(String, String)] {
        if sendsChecksums { return [(checksum.headerName, digests.checksum.base64)] }
        return digests.md5.map { [("Content-MD5", $0.base64)] } ?? []
    }
}

/// What an upload reports while it runs. Events come from the upload's worker threads, one at
/// a time, in order; a handler must return quickly.
public enum S3UploadEvent: Sendable, Hashable {
    /// The multipart upload exists: save `uploadID` to resume after a crash. Reported before
    /// any part is sent.
    case created(uploadID: String)
    /// A resumed upload keeps `partsKept` parts (`bytesKept` bytes) the server already has and
    /// whose size and checksum or ETag match the source.
    case resumed(uploadID: String, partsKept: Int, bytesKept: Int64)
    /// `completedBytes` of `totalBytes` (`nil`: a stream whose length only its end tells) are
    /// on the server, kept parts included: the parts it confirmed, never bytes merely sent.
    case progress(completedBytes: Int64, totalBytes: Int64?)
    /// `sentBytes` have been written to the server: the bytes of ``progress(completedBytes:totalBytes:)``
    /// and those of the parts in flight so far (a part sent again counts from its start again),
    /// so it runs ahead of the confirmed bytes and may fall back when a part fails. Reported
    /// as the bytes go out, every 256 KiB or rate-limited slice at most.
    case sent(sentBytes: Int64, totalBytes: Int64?)
    /// Part `partNumber` (`nil`: a request outside the parts) failed with a transient error
    /// and is tried again after `delay` seconds, as attempt `attempt`.
    case retrying(partNumber: Int?, attempt: Int, delay: TimeInterval, error: S3Error)
    /// Part `partNumber` was sent and acknowledged.
    case partUploaded(partNumber: Int, bytes: Int)
    /// What the ``S3UploadOptions/journal`` did.
    case journal(UploadJournalNotice)
    /// `CreateMultipartUpload` was sent again after a failure that may have reached the server
    /// (a connection that broke, or an answer that did not come): an earlier attempt may have
    /// made an upload that nothing will complete, which S3 keeps, and bills, until it is
    /// aborted. `otherUploads` are the key's unfinished uploads other than `uploadID` (`nil`
    /// when they could not be listed); abort those that are no other writer's
    /// (``S3Client/abortUpload(key:uploadID:)``, `blobstream s3 abort`).
    case createdAgain(uploadID: String, otherUploads: [S3UnfinishedUpload]?)
}

/// What a finished upload created.
public struct S3UploadResult: Sendable, Hashable {
    /// The bucket.
    public var bucket: String
    /// The key.
    public var key: String
    /// The object's ETag as S3 gives it (with its quotes; `"…-N"` for N parts).
    public var eTag: String
    /// The object's checksum as S3 reports it (a composite `…-N` of the parts' for a multipart
    /// upload, the CRC of every byte for a full-object one), base64, or `nil` when the server
    /// gives none (a full-object upload then reports the CRC it sent) or checksums are off
    /// (``S3UploadOptions/sendsChecksums``).
    public var checksum: String?
    /// Whether the server named the whole object's ``checksum`` itself and it is the one
    /// computed here: a `PutObject` answer that echoes the checksum sent, or a full-object
    /// `CompleteMultipartUpload` answer that names the combined CRC. `false` when it named none
    /// (a server that ignores checksums) or only a composite of the parts: ``checksum`` is then
    /// this client's own, not a proof that the stored object is the source.
    public var checksumVerifiedByServer = false
    /// The multipart upload's id, or `nil` for a single `PutObject`.
    public var uploadID: String?
    /// The object's length.
    public var length: Int64
    /// How many parts the object has (1 for a single `PutObject`).
    public var partCount: Int
    /// How many parts this call sent (less than ``partCount`` when it resumed).
    public var partsSent: Int
}
