#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Streams a regular file with `pread` on one descriptor; the file is never copied.
///
/// The length and version (device, inode, size and modification time) are taken from the
/// descriptor when the file opens.
/// - A file that shrinks while it is read fails with
///   ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` when a read finds no
///   bytes; bytes appended after the open are not read.
/// - A file replaced by another (a rename over its path) is read to the end of the version that
///   was opened, because the descriptor keeps it alive: one whole version, no error.
/// - A FIFO, socket or device is refused at once with
///   ``BlobStreamError/notRegularFile(path:kind:)``: it cannot be read at an offset, and a FIFO
///   without a writer would block `open(2)` for good. (The command line reads such inputs
///   through a sequential source of its own.)
public final class FileDataSource: BlobDataSource {
    /// The path of the file.
    public let path: String
    private let opened = Mutex<OpenedFile?>(nil)

    /// Creates a source for the file at `path`. Nothing is opened until the stream opens it.
    public init(path: String) {
        self.path = path
    }

    /// The path of the file.
    public var resourceName: String { path }

    /// Opens the file without blocking and reports its length and version, or why it cannot be
    /// read (missing, a directory, a FIFO or other special file, no permission).
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        close()
        switch Syscall.openRegularFile(path) {
        case .success(let file):
            opened.withLock { $0 = file }
            completion(.success(BlobSourceDescription(length: Int64(file.status.st_size), identity: file.status.versionToken)))
        case .failure(.isDirectory):
            completion(.failure(.isDirectory(path: path)))
        case .failure(.notRegularFile(let kind)):
            completion(.failure(.notRegularFile(path: path, kind: kind)))
        case .failure(.system(let operation, let error)):
            completion(.failure(Self.openError(error, operation: operation, path: path)))
        }
    }

    private static func openError(_ error: Errno, operation: String, path: String) -> BlobStreamError {
        switch error.rawValue {
        case ENOENT, ENOTDIR: return .notFound(resource: path)
        case EACCES, EPERM: return .permissionDenied(resource: path)
        default: return .system(resource: path, operation: operation, offset: nil, errno: error.rawValue)
        }
    }

    /// Reads with one `pread`. Never answers ``BlobSourceReadResult/wouldBlock``: local reads
    /// are immediate.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard let file = opened.withLock({ $0 }) else { return .failed(.notOpen) }
        let length = Int64(file.status.st_size)
        if offset >= length { return .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        switch file.descriptor.pread(into: wanted, at: offset) {
        case .success(0):
            return .failed(.unexpectedEnd(resource: path, offset: offset, expectedLength: length))
        case .success(let count):
            return .read(count)
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        }
    }

    /// Lets go of the descriptor, which closes when no read holds it any more. Idempotent.
    public func close() {
        opened.withLock { $0 = nil }
    }
}
