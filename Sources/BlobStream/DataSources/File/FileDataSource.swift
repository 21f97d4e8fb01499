#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import SystemCalls

/// Streams a regular file with `pread` on one descriptor; the file is never copied.
///
/// The length and version (see ``BlobSourceDescription/version``: device, inode, size,
/// modification and status-change time) are taken from the descriptor when the file opens.
/// - A file rewritten in place while it is read fails with
///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never with a success made of
///   two versions. Reads compare the descriptor's status with the open's (one `fstat`) every
///   ``versionCheckInterval`` bytes, so a long read fails early, and at the end of the file,
///   so its last bytes are not delivered; ``confirmUnchanged(at:)`` compares once more before
///   the stream reports the end. (What a status can and cannot reveal is said in
///   `FileVersion.swift`: a rewrite that keeps the size within one coarse clock tick of the
///   open, on Linux before 6.13, leaves no trace.)
/// - A file that shrinks while it is read fails with
///   ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)`` when a read finds no
///   bytes; bytes appended after the open are not read, and the end check reports the growth.
/// - A size is trusted only once a read confirms it (README, "Sizes that lie"): a file whose
///   status says 0 bytes but that has some (`/proc`, `/sys` and other pseudo files) is read as
///   a blob of unknown length, to the end a read finds, as `sha256sum` reads it; a file with
///   bytes past a non-zero size fails at its announced end with
///   ``BlobStreamError/lengthExceeded(resource:length:)``, never a short success.
/// - A file replaced by another (a rename over its path) is read to the end of the version that
///   was opened, because the descriptor keeps it alive: one whole version, no error.
/// - A FIFO, socket or device is refused at once with
///   ``BlobStreamError/notRegularFile(path:kind:)``: it cannot be read at an offset, and a FIFO
///   without a writer would block `open(2)` for good. (The command line reads such inputs
///   through a sequential source of its own.)
public final class FileDataSource: BlobDataSource {
    /// How many bytes reads may deliver between two comparisons of the file's status: 8 MiB,
    /// one `fstat` per 128 reads of 64 KiB, which costs nothing measurable next to the reads.
    static let versionCheckInterval: Int64 = 8 << 20

    /// The path of the file.
    public let path: String
    private let opened = LockedValue<Handle?>(nil)
    /// What every `fstat` of this source goes through: the version but in tests, which stand
    /// in a filesystem whose sizes lie.
    private let statusSeen: @Sendable (stat) -> stat

    /// An open file and the length announced for it: its size, or `nil` for a size that a
    /// read contradicted at the open.
    private struct Handle {
        let file: OpenedFile
        let status: stat
        let length: Int64?
    }

    /// Creates a source for the file at `path`. Nothing is opened until the stream opens it.
    public init(path: String) {
        self.path = path
        self.statusSeen = { $0 }
    }

    /// A source that sees every status of the file through `statusSeen` (test seam: a
    /// filesystem whose sizes lie).
    init(path: String, statusSeen: @escaping @Sendable (stat) -> stat) {
        self.path = path
        self.statusSeen = statusSeen
    }

    /// The path of the file.
    public var resourceName: String { path }

    /// `true`: a `pread` never waits for another party (the contract counts local reads as immediate).
    public var readsImmediately: Bool { true }

    /// Opens the file without blocking and reports its length and version, or why it cannot be
    /// read (missing, a directory, a FIFO or other special file, no permission). A size of 0
    /// is confirmed with a one-byte read; a file that has bytes after all is announced with an
    /// unknown length.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        close()
        switch OpenedFile.open(path) {
        case .success(let file):
            let status = statusSeen(file.status)
            var length: Int64? = Int64(status.st_size)
            if length == 0 {
                switch file.hasBytes(at: 0) {
                case .success(let more): if more { length = nil }
                case .failure(let error): return completion(.failure(.system(resource: path, operation: "pread", offset: 0, errno: error.rawValue)))
                }
            }
            opened.withLock { $0 = Handle(file: file, status: status, length: length) }
            completion(.success(BlobSourceDescription(length: length, version: status.versionToken)))
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
    /// reaches a multiple of ``versionCheckInterval`` or the end of the file, so even the last
    /// bytes of a file rewritten meanwhile are not delivered; at the announced end it also
    /// confirms that no byte follows. Never answers ``BlobSourceReadResult/wouldBlock``: local
    /// reads are immediate.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard let handle = opened.withLock({ $0 }) else { return .failed(.notOpen) }
        guard let length = handle.length else { return readToTheEnd(handle, into: buffer, at: offset) }
        if offset >= length { return verifyEnd(of: handle, at: offset).map { .failed($0) } ?? .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        switch handle.file.descriptor.pread(into: wanted, at: offset) {
        case .success(0):
            return .failed(.unexpectedEnd(resource: path, offset: offset, expectedLength: length))
        case .success(let count):
            let end = offset + Int64(count), interval = Self.versionCheckInterval
            let error = end == length ? verifyEnd(of: handle, at: offset)
                : end / interval > offset / interval ? change(of: handle, at: offset) : nil
            return error.map { .failed($0) } ?? .read(count)
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        }
    }

    /// A read of a file whose size was contradicted: to the end that a read finds.
    private func readToTheEnd(_ handle: Handle, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> BlobSourceReadResult {
        switch handle.file.descriptor.pread(into: buffer, at: offset) {
        case .success(0):
            // The end only if the blob reaches here: past it (a seek too far), the offset is
            // no offset of this blob, whose length would otherwise be taken to be it.
            guard offset > 0 else { return .end }
            switch handle.file.hasBytes(at: offset - 1) {
            case .success(true): return .end
            case .success(false): return .failed(.invalidOffset(resource: path, offset: offset, length: nil))
            case .failure(let error): return .failed(.system(resource: path, operation: "pread", offset: offset - 1, errno: error.rawValue))
            }
        case .success(let count):
            let interval = Self.versionCheckInterval
            if (offset + Int64(count)) / interval > offset / interval, let error = change(of: handle, at: offset) { return .failed(error) }
            return .read(count)
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        }
    }

    /// Compares the descriptor's status (one `fstat`) with the open's, and confirms that no
    /// byte follows the announced length (one `pread` of a byte): a different size,
    /// modification time or status-change time is
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` naming what changed; bytes
    /// past the length are ``BlobStreamError/lengthExceeded(resource:length:)``.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        guard let handle = opened.withLock({ $0 }) else { return nil }
        return verifyEnd(of: handle, at: offset)
    }

    /// The end check (``OpenedFile/confirmEnd(of:length:at:resource:path:seen:)``).
    private func verifyEnd(of handle: Handle, at offset: Int64) -> BlobStreamError? {
        handle.file.confirmEnd(of: handle.status, length: handle.length, at: offset, resource: path, path: path, seen: statusSeen)
    }

    private func change(of handle: Handle, at offset: Int64) -> BlobStreamError? {
        handle.file.change(since: handle.status, at: offset, resource: path, path: path, seen: statusSeen)
    }

    /// Lets go of the descriptor, which closes when no read holds it any more. Idempotent.
    public func close() {
        opened.withLock { $0 = nil }
    }
}
