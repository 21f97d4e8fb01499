import Synchronization

/// Streams a regular file with `pread` on one descriptor; the file is never copied.
///
/// The length and version are taken when the file opens. A file that shrinks while it is read
/// fails with ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)``; bytes appended
/// after the open are not read. A file replaced by another (a new inode) is read to the end of
/// the version that was opened, because the descriptor keeps it alive.
public final class FileDataSource: BlobDataSource {
    /// The path of the file.
    public let path: String
    private let state = Mutex<(fd: Int32, length: Int64)>((-1, 0))

    /// Creates a source for the file at `path`. Nothing is opened until the stream opens it.
    public init(path: String) {
        self.path = path
    }

    deinit {
        close()
    }

    /// The path of the file.
    public var resourceName: String { path }

    /// Opens the file and reports its length and version, or why it cannot be read (missing,
    /// a directory, not a regular file, no permission).
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        close()
        completion(openNow())
    }

    private func openNow() -> Result<BlobSourceDescription, BlobStreamError> {
        let fd: Int32
        switch Syscall.openReadOnly(path) {
        case .success(let descriptor): fd = descriptor
        case .failure(let error): return .failure(Self.openError(error, path: path))
        }
        switch Syscall.fileStatus(fd) {
        case .failure(let error):
            Syscall.close(fd)
            return .failure(.system(resource: path, operation: "fstat", offset: nil, errno: error.rawValue))
        case .success(let status):
            if status.isDirectory {
                Syscall.close(fd)
                return .failure(.isDirectory(path: path))
            }
            guard status.isRegularFile else {
                Syscall.close(fd)
                return .failure(.sourceFailed(resource: path, reason: "not a regular file"))
            }
            let length = Int64(status.st_size)
            state.withLock { $0 = (fd, length) }
            return .success(BlobSourceDescription(length: length, identity: status.versionToken))
        }
    }

    static func openError(_ error: Errno, path: String) -> BlobStreamError {
        switch error.rawValue {
        case ENOENT, ENOTDIR: return .notFound(resource: path)
        case EACCES, EPERM: return .permissionDenied(resource: path)
        case EISDIR: return .isDirectory(path: path)
        default: return .system(resource: path, operation: "open", offset: nil, errno: error.rawValue)
        }
    }

    /// Reads with one `pread`. Never answers ``BlobSourceReadResult/wouldBlock``: local reads
    /// are immediate.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let (fd, length) = state.withLock { $0 }
        guard fd >= 0 else { return .failed(.notOpen) }
        if offset >= length { return .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        switch Syscall.pread(fd, wanted, at: offset) {
        case .success(0):
            return .failed(.unexpectedEnd(resource: path, offset: offset, expectedLength: length))
        case .success(let count):
            return .read(count)
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        }
    }

    /// Closes the descriptor. Idempotent.
    public func close() {
        let fd = state.withLock { state in
            defer { state.fd = -1 }
            return state.fd
        }
        if fd >= 0 { Syscall.close(fd) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
