import Foundation
internal import SystemCalls

/// The file-backed ``UploadJournal``: one small JSON file per unfinished upload in a
/// directory of its own, by default `$XDG_STATE_HOME/blobstream/uploads` (else
/// `~/.local/state/blobstream/uploads`), created with mode 0700 (the entries name upload URLs
/// and ids, which may be credentials).
///
/// - Crash-safe: an entry is written to a temporary file, flushed (`fsync`), renamed over the
///   old one and the directory flushed; a crash at any point leaves the old entry or the new
///   one, whole. Leftover temporary files are removed by the next call.
/// - Safe for several processes and threads at once: every call holds an exclusive `flock`
///   on the directory's `lock` file while it touches entries.
/// - Expiring: an entry not written for ``maximumAge`` (7 days by default) is removed when any
///   entry is looked up, as are set-aside files of that age.
/// - Distrustful: a file that is not an entry of this format and version (damaged, truncated,
///   foreign, or filed under another key) is renamed `NAME.damaged-TIME` and reported with
///   ``UploadJournalError/damaged(path:setAsideAs:reason:)``, never read as an entry.
public final class FileUploadJournal: UploadJournal {
    /// The directory of the entries.
    public let directory: String
    /// How long an entry lives after it was last written: 7 days by default.
    public let maximumAge: TimeInterval
    /// The default ``maximumAge``: 7 days.
    public static let defaultMaximumAge: TimeInterval = 7 * 24 * 60 * 60

    /// A journal in `directory` (created, with its parents, on first use).
    public init(directory: String, maximumAge: TimeInterval = FileUploadJournal.defaultMaximumAge) {
        self.directory = directory
        self.maximumAge = maximumAge
    }

    /// The default directory: `$XDG_STATE_HOME/blobstream/uploads` when `XDG_STATE_HOME` is an
    /// absolute path, else `$HOME/.local/state/blobstream/uploads`; `nil` without either.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        // The XDG specification ignores a relative path.
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return state + "/blobstream/uploads"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/state/blobstream/uploads"
    }

    /// The entry for `key` from its file, or `nil` when there is none (expired ones are removed
    /// first). A damaged or foreign file is set aside and thrown as ``UploadJournalError/damaged(path:setAsideAs:reason:)``.
    public func entry(for key: UploadJournalKey) throws(UploadJournalError) -> UploadJournalEntry? {
        try locked { () throws(UploadJournalError) -> UploadJournalEntry? in
            removeExpired()
            let path = path(of: key)
            let data: Data
            switch readFile(path) {
            case .success(let read): data = read
            case .failure(Errno.notFound): return nil
            case .failure(let failure): throw .unavailable(path: path, operation: "read", errno: failure.rawValue)
            }
            let stored: StoredEntry
            do {
                stored = try Self.decoder.decode(StoredEntry.self, from: data)
            } catch {
                throw setAside(path, reason: "not a journal entry in JSON")
            }
            guard stored.format == StoredEntry.format else {
                throw setAside(path, reason: "its format is \"\(stored.format)\", not \"\(StoredEntry.format)\"")
            }
            guard stored.entry.key == key else {
                throw setAside(path, reason: "it is the entry of \(stored.entry.key), filed under \(key)")
            }
            return stored.entry
        }
    }

    /// Writes `entry` to its file, atomically (temporary file, `fsync`, `rename`, directory
    /// `fsync`), under the directory's lock.
    public func record(_ entry: UploadJournalEntry) throws(UploadJournalError) {
        let data: Data
        do {
            data = try Self.encoder.encode(StoredEntry(entry: entry))
        } catch {
            throw .unavailable(path: path(of: entry.key), operation: "encode", errno: EINVAL)
        }
        try locked { () throws(UploadJournalError) in
            try replace(path(of: entry.key), with: data)
        }
    }

    /// Removes the file of `key`, if there is one, under the directory's lock.
    public func remove(_ key: UploadJournalKey) throws(UploadJournalError) {
        try locked { () throws(UploadJournalError) in
            let path = path(of: key)
            if let failure = FileSystem.unlink(path), failure != Errno.notFound {
                throw .unavailable(path: path, operation: "unlink", errno: failure.rawValue)
            }
            _ = FileSystem.syncDirectory(directory)
        }
    }

    /// The file of `key`'s entry.
    func path(of key: UploadJournalKey) -> String {
        directory + "/" + key.digest + ".json"
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()
}

/// An entry as it is stored: marked with the format, so that any other file is told apart.
struct StoredEntry: Codable {
    /// The format and its version; a file of another one is not trusted.
    static let format = "blobstream-upload-journal-1"
    var format = StoredEntry.format
    var entry: UploadJournalEntry
}
