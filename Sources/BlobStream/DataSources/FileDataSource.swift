#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import SystemCalls
import Synchronization

/// Streams a regular file with `pread` on one descriptor; the file is never copied.
///
/// The length and version (see ``BlobSourceDescription/identity``: device, inode, size,
/// modification and status-change time) are taken from the descriptor when the file opens.
/// - A file rewritten in place while it is read fails with
///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never with a success made of
///   two versions. Reads compare the descriptor's status with the open's (one `fstat`) every
///   ``identityCheckInterval`` bytes, so a long read fails early, and at the end of the file,
///   so its last bytes are not delivered; ``confirmUnchanged(at:)`` compares once more before
///   the stream reports the end. (What a status can and cannot reveal is said in
///   `FileVersion.swift`: a rewrite that keeps the size within one coarse clock tick of the
///   open, on Linux before 6.13, leaves no trace.)
/// - A file that shrinks while it is read fails with
///   ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` when a read finds no
///   bytes; bytes appended after the open are not read, and the end check reports the growth.
/// - A file replaced by another (a rename over its path) is read to the end of the version that
///   was opened, because the descriptor keeps it alive: one whole version, no error.
/// - A FIFO, socket or device is refused at once with
///   ``BlobStreamError/notRegularFile(path:kind:)``: it cannot be read at an offset, and a FIFO
///   without a writer would block `open(2)` for good. (The command line reads such inputs
///   through a sequential source of its own.)
public final class FileDataSource: BlobDataSource {
    /// How many bytes reads may deliver between two comparisons of the file's status: 8 MiB,
    /// one `fstat` per 128 reads of 64 KiB, which costs nothing measurable next to the reads.
    static let identityCheckInterval: Int64 = 8 << 20

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
        switch OpenedFile.open(path) {
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

    static func openError(_ error: Errno, operation: String, path: String) -> BlobStreamError {
        switch error.rawValue {
        case ENOENT, ENOTDIR: return .notFound(resource: path)
        case EACCES, EPERM: return .permissionDenied(resource: path)
        default: return .system(resource: path, operation: operation, offset: nil, errno: error.rawValue)
        }
    }

    /// Reads with one `pread`, and compares the file's status with the open's whenever the read
    /// reaches a multiple of ``identityCheckInterval`` or the end of the file, so even the last
    /// bytes of a file rewritten meanwhile are not delivered. Never answers
    /// ``BlobSourceReadResult/wouldBlock``: local reads are immediate.
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
            let end = offset + Int64(count), interval = Self.identityCheckInterval
            if end == length || end / interval > offset / interval, let error = change(of: file, at: offset) {
                return .failed(error)
            }
            return .read(count)
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        }
    }

    /// Compares the descriptor's status (one `fstat`) with the open's: a different size,
    /// modification time or status-change time is
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` naming what changed.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        guard let file = opened.withLock({ $0 }) else { return nil }
        return change(of: file, at: offset)
    }

    private func change(of file: OpenedFile, at offset: Int64) -> BlobStreamError? {
        switch file.descriptor.status() {
        case .failure(let error):
            return .system(resource: path, operation: "fstat", offset: offset, errno: error.rawValue)
        case .success(let now):
            return now.change(since: file.status).map { .sourceChanged(resource: path, offset: offset, reason: $0) }
        }
    }

    /// Lets go of the descriptor, which closes when no read holds it any more. Idempotent.
    public func close() {
        opened.withLock { $0 = nil }
    }
}
