import BlobStream
import Foundation

/// A persistent store of unfinished uploads, so that a later run (another process, after a
/// crash or a reboot) continues an upload instead of starting it over.
///
/// An upload that is given a journal (``TusUploadOptions/journal``, ``S3UploadOptions/journal``)
/// looks up its ``UploadJournalKey`` — what is uploaded and where to — before it creates
/// anything. An entry whose source version is the one the source has now is continued from
/// where the *server* says (the tus offset, the S3 part list: the journal is never trusted over
/// the server); an entry of another version, of another length, or of an upload the server
/// has forgotten is removed and a new upload starts (the upload reports why with
/// ``UploadJournalNotice/startingOver(upload:reason:)``). The entry is written when the upload
/// is created, updated as S3 parts are confirmed, and removed when the upload completes.
///
/// Only sources with a version are journaled (``BlobSourceDescription/version``: files,
/// `file:` URLs, HTTP blobs whose server names an `ETag` or `Last-Modified`); live data and
/// plain stream sources never are.
///
/// The methods are called from the upload's tasks and threads, possibly at once for one
/// upload (S3 parts complete in parallel): an implementation must be thread-safe. A failure
/// never fails the upload: it is reported (``UploadJournalNotice/unavailable(_:)``) and the
/// upload goes on without the journal. ``FileUploadJournal`` is the file-backed default.
public protocol UploadJournal: Sendable {
    /// The entry for `key`, or `nil` when there is none (or it expired).
    /// - Throws: ``UploadJournalError/damaged(path:setAsideAs:reason:)`` for a stored entry that
    ///   cannot be trusted (it is set aside, and the upload starts afresh),
    ///   ``UploadJournalError/unavailable(path:operation:errno:)`` when the store cannot be read.
    func entry(for key: UploadJournalKey) throws(UploadJournalError) -> UploadJournalEntry?
    /// Stores `entry`, replacing any entry of its key; once this returns, a crash or a power
    /// loss keeps either the old entry or this one, never a mix.
    func record(_ entry: UploadJournalEntry) throws(UploadJournalError)
    /// Removes the entry of `key`, if there is one.
    func remove(_ key: UploadJournalKey) throws(UploadJournalError)
}

/// What an upload journal entry is about: the source (an absolute path or a URL) and the
/// destination (a tus endpoint, or an S3 endpoint, bucket and key).
public struct UploadJournalKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The source's absolute path, or its URL.
    public var source: String
    /// Where it goes: the tus creation URL, or `s3://bucket/key at endpoint`.
    public var destination: String

    /// The key of `source` going to `destination`.
    public init(source: String, destination: String) {
        self.source = source
        self.destination = destination
    }

    /// The key of an upload's source named `name` (a path, made absolute against the current
    /// directory, or a URL) to `destination`. `isPath` says `name` is a file's path (a name
    /// such as `notes:v2.txt` then is no URL); without it, a name with a scheme is a URL.
    init(sourceName name: String, isPath: Bool = false, destination: String) {
        self.init(source: Self.absolute(name, isPath: isPath), destination: destination)
    }

    /// A stable name for the key: the SHA-256 (hex) of source and destination.
    public var digest: String {
        SHA256.digest(of: Data((source + "\u{0}" + destination).utf8)).hex
    }

    /// `source to destination`, as messages name the upload.
    public var description: String { "\(source) to \(destination)" }

    /// `name` as an absolute, standardized path when it is a path; URLs unchanged.
    private static func absolute(_ name: String, isPath: Bool) -> String {
        if !isPath, let url = URL(string: name), let scheme = url.scheme, !scheme.isEmpty, !name.hasPrefix("/") { return name }
        let path = name.hasPrefix("/") ? name : FileManager.default.currentDirectoryPath + "/" + name
        return (path as NSString).standardizingPath
    }
}

/// Why an upload journal could not be used.
public enum UploadJournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store at `path` cannot be read or written: `operation` failed with `errno` (not
    /// writable, full, a read-only file system).
    case unavailable(path: String, operation: String, errno: Int32)
    /// The file at `path` is no journal entry of this version (damaged, truncated, foreign):
    /// it was renamed to `setAsideAs` (`nil` when even that failed) and not trusted.
    case damaged(path: String, setAsideAs: String?, reason: String)

    /// What happened, as the commands say it.
    public var description: String {
        switch self {
        case .unavailable(let path, let operation, let code):
            return "the upload journal at \(path) cannot be used: \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .damaged(let path, let setAside, let reason):
            let moved = setAside.map { "; it was set aside as \($0)" } ?? "; it could not be set aside"
            return "the upload journal file \(path) is damaged or not a journal entry (\(reason))\(moved)"
        }
    }
}

/// An ``UploadJournal`` held by reference (see ``TusUploadOptions/journal``).
final class UploadJournalReference: Sendable {
    let journal: any UploadJournal

    init(_ journal: any UploadJournal) {
        self.journal = journal
    }
}
