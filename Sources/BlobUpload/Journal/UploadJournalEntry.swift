import Foundation

/// What an upload journal keeps of one unfinished upload: what a later run needs to continue
/// it, and the source version it must find to be allowed to.
public struct UploadJournalEntry: Sendable, Hashable, Codable {
    /// What is uploaded where.
    public var key: UploadJournalKey
    /// The source's version when the upload started (``BlobSourceDescription/version``: a
    /// file's device, inode, size and times; an HTTP blob's validator). A source of any other
    /// version is never continued.
    public var sourceVersion: String
    /// The source's length in bytes.
    public var length: Int64
    /// When the entry was last written; an entry older than its journal's maximum age expires.
    public var updated: Date
    /// The upload on the server.
    public var upload: Upload

    /// The upload on the server, by protocol.
    public enum Upload: Sendable, Hashable, Codable {
        /// A tus upload and its URL.
        case tus(uploadURL: URL)
        /// An S3 multipart upload.
        case s3(upload: UploadJournalS3Upload)
    }

    /// An entry written now.
    public init(key: UploadJournalKey, sourceVersion: String, length: Int64, updated: Date = Date(), upload: Upload) {
        self.key = key
        self.sourceVersion = sourceVersion
        self.length = length
        self.updated = updated
        self.upload = upload
    }
}

/// An S3 multipart upload in a journal entry.
public struct UploadJournalS3Upload: Sendable, Hashable, Codable {
    /// The multipart upload's id.
    public var uploadID: String
    /// Its part size in bytes.
    public var partSize: Int
    /// The checksum algorithm its parts carry (`CRC32C`, …), or `nil` when they carry none.
    public var checksumAlgorithm: String?
    /// Its checksum type (`FULL_OBJECT`, `COMPOSITE`), or `nil` when its parts carry none or
    /// the entry predates the field.
    public var checksumType: String?
    /// The parts the server confirmed, by number.
    public var parts: [UploadJournalPart]

    /// A record of the multipart upload `uploadID`.
    public init(uploadID: String, partSize: Int, checksumAlgorithm: String?, checksumType: String? = nil, parts: [UploadJournalPart] = []) {
        self.uploadID = uploadID
        self.partSize = partSize
        self.checksumAlgorithm = checksumAlgorithm
        self.checksumType = checksumType
        self.parts = parts
    }
}

/// A part the server confirmed: its number, size, ETag and checksum (base64), to compare with
/// what the server lists when the upload is continued.
public struct UploadJournalPart: Sendable, Hashable, Codable {
    /// The part number, from 1.
    public var number: Int
    /// Its size in bytes.
    public var size: Int
    /// The ETag the server answered for it.
    public var eTag: String
    /// Its checksum of the upload's algorithm, base64, as sent; `nil` without checksums.
    public var checksum: String?

    /// A record of a confirmed part.
    public init(number: Int, size: Int, eTag: String, checksum: String?) {
        self.number = number
        self.size = size
        self.eTag = eTag
        self.checksum = checksum
    }
}
