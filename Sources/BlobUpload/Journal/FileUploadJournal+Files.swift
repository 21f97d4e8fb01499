import Foundation
internal import SystemCalls

/// The file operations of a ``FileUploadJournal``: the lock, atomic replacement, setting a
/// damaged file aside, and removing what expired.
extension FileUploadJournal {
    /// The largest entry file read: 10,000 parts take about 2 MB; anything larger is no entry.
    static let maximumFileSize = 16 << 20

    /// Runs `body` holding the exclusive lock of the directory, created first if need be.
    func locked<T>(_ body: () throws(UploadJournalError) -> T) throws(UploadJournalError) -> T {
        try makeDirectory()
        let lockPath = directory + "/lock"
        let lock: FileDescriptor
        switch FileDescriptor.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, permissions: 0o600) {
        case .failure(let failure): throw .unavailable(path: lockPath, operation: "open", errno: failure.rawValue)
        case .success(let opened): lock = opened
        }
        // Another process holds it for a moment only (one small write); one that holds it for
        // longer is stopped or stuck, and the upload goes on without the journal.
        if let failure = lock.lockExclusively(waitingAtMost: 5) {
            throw .unavailable(path: lockPath, operation: "flock", errno: failure.rawValue)
        }
        // The lock is held until `lock` goes away, after the body.
        return try withExtendedLifetime(lock) { () throws(UploadJournalError) -> T in try body() }
    }

    /// Creates the directory and its missing parents, the directory itself private (0700).
    private func makeDirectory() throws(UploadJournalError) {
        var path = ""
        for component in directory.split(separator: "/") {
            path += "/" + component
            if case .success(let status) = FileSystem.status(atPath: path), status.isDirectory { continue }
            if let failure = FileSystem.makeDirectory(path, permissions: path == directory ? 0o700 : 0o755),
               failure != Errno.exists {
                throw .unavailable(path: path, operation: "mkdir", errno: failure.rawValue)
            }
        }
    }

    /// The bytes of the file at `path` (at most ``maximumFileSize`` and one more).
    func readFile(_ path: String) -> Result<Data, Errno> {
        FileDescriptor.open(path, O_RDONLY | O_CLOEXEC).flatMap { file in
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while data.count <= Self.maximumFileSize {
                let result = buffer.withUnsafeMutableBytes { file.read(into: $0) }
                switch result {
                case .failure(let failure): return .failure(failure)
                case .success(0): return .success(data)
                case .success(let count): data.append(contentsOf: buffer[0..<count])
                }
            }
            return .success(data)
        }
    }

    /// Writes `data` to a temporary file, flushes it, renames it to `path` and flushes the
    /// directory: `path` is the old file or the new one, whole, whenever the process dies.
    func replace(_ path: String, with data: Data) throws(UploadJournalError) {
        let temporary = directory + "/" + Self.temporaryPrefix + UUID().uuidString.lowercased()
        let file: FileDescriptor
        switch FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions: 0o600) {
        case .failure(let failure): throw .unavailable(path: temporary, operation: "create", errno: failure.rawValue)
        case .success(let opened): file = opened
        }
        var failure: UploadJournalError?
        if let error = data.withUnsafeBytes({ file.writeAll($0) }) {
            failure = .unavailable(path: temporary, operation: "write", errno: error.rawValue)
        } else if let error = file.sync() {
            failure = .unavailable(path: temporary, operation: "fsync", errno: error.rawValue)
        } else if let error = FileSystem.rename(temporary, to: path) {
            failure = .unavailable(path: path, operation: "rename", errno: error.rawValue)
        } else if let error = FileSystem.syncDirectory(directory) {
            failure = .unavailable(path: directory, operation: "fsync", errno: error.rawValue)
        }
        if let failure {
            _ = FileSystem.unlink(temporary)
            throw failure
        }
    }

    /// The names of temporary files start with this; any found while the lock is held were
    /// left by a writer that died before its rename.
    static let temporaryPrefix = ".entry.tmp-"

    /// Renames the untrustworthy file at `path` out of the way, and says so.
    func setAside(_ path: String, reason: String) -> UploadJournalError {
        let target = path + ".damaged-" + String(Int(Date().timeIntervalSince1970)) + "-" + UUID().uuidString.prefix(8).lowercased()
        if FileSystem.rename(path, to: target) != nil {
            // Never read again as an entry, even if it cannot be kept.
            _ = FileSystem.unlink(path)
            return .damaged(path: path, setAsideAs: nil, reason: reason)
        }
        _ = FileSystem.syncDirectory(directory)
        return .damaged(path: path, setAsideAs: target, reason: reason)
    }

    /// Removes entries and set-aside files not written for ``maximumAge``, and temporary files
    /// of writers that died (called with the lock held, so no writer is alive).
    func removeExpired() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        let now = Date().timeIntervalSince1970
        for name in names {
            let path = directory + "/" + name
            if name.hasPrefix(Self.temporaryPrefix) {
                _ = FileSystem.unlink(path)
                continue
            }
            guard name.hasSuffix(".json") || name.contains(".json.damaged-"),
                  case .success(let status) = FileSystem.linkStatus(atPath: path) else { continue }
            let modified = Double(status.modificationTime.tv_sec) + Double(status.modificationTime.tv_nsec) / 1e9
            if now - modified > maximumAge { _ = FileSystem.unlink(path) }
        }
    }
}
