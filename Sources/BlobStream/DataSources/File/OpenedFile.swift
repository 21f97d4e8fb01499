#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import SystemCalls

/// A regular file opened for reading by ``open(_:followFinalLink:)``, with its status as of the
/// open: the file source's and the asset store's way in.
struct OpenedFile: Sendable {
    /// The descriptor, open for reading, blocking mode.
    let descriptor: FileDescriptor
    /// The status `fstat` gave right after the open: the version that was opened.
    let status: stat

    /// Opens `path` for reading if it is a regular file, without ever blocking in `open(2)`.
    ///
    /// A FIFO without a writer blocks a plain `open` for good, beyond any timeout, so the file
    /// is opened with `O_NONBLOCK`, its type is taken from the descriptor (not from the path,
    /// which could be swapped in between), and only then is `O_NONBLOCK` cleared again.
    /// - Parameter followFinalLink: `false` refuses a symbolic link in the last component
    ///   (`ELOOP`) instead of following it.
    static func open(_ path: String, followFinalLink: Bool = true) -> Result<OpenedFile, RegularFileOpenError> {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followFinalLink ? 0 : O_NOFOLLOW)
        let descriptor: FileDescriptor
        switch FileDescriptor.open(path, flags) {
        case .success(let opened):
            descriptor = opened
        case .failure(let error):
            // A socket (or a device without a driver) cannot be opened at all: say what it is.
            if error.rawValue == ENXIO, case .success(let status) = FileSystem.status(atPath: path), !status.isRegularFile {
                return .failure(.notRegularFile(kind: status.kind))
            }
            return .failure(.system(operation: "open", errno: error))
        }
        let status: stat
        switch descriptor.status() {
        case .success(let value): status = value
        case .failure(let error): return .failure(.system(operation: "fstat", errno: error))
        }
        if status.isDirectory { return .failure(.isDirectory) }
        guard status.isRegularFile else { return .failure(.notRegularFile(kind: status.kind)) }
        if let error = descriptor.setNonBlocking(false) { return .failure(.system(operation: "fcntl", errno: error)) }
        return .success(OpenedFile(descriptor: descriptor, status: status))
    }
}

extension OpenedFile {
    /// Whether a read at `offset` finds at least one byte (a one-byte `pread`): how a source
    /// confirms that a file ends where its size says (README, "Sizes that lie").
    func hasBytes(at offset: Int64) -> Result<Bool, Errno> {
        var byte: UInt8 = 0
        return withUnsafeMutableBytes(of: &byte) { descriptor.pread(into: $0, at: offset) }.map { $0 > 0 }
    }

    /// The end check of a file read as the version `opened`, announced `length` bytes long
    /// (`nil`: the end is the read of 0): the version first (a writer that appended changed the
    /// size, which says more than "bytes follow"), then ``bytesPast(_:resource:path:)``. The
    /// file source and the asset store both end with it.
    func confirmEnd(
        of opened: stat, length: Int64?, at offset: Int64, resource: String, path: String, seen: (stat) -> stat = { $0 }
    ) -> BlobStreamError? {
        if let error = change(since: opened, at: offset, resource: resource, path: path, seen: seen) { return error }
        return length.flatMap { bytesPast($0, resource: resource, path: path) }
    }

    /// A version other than `opened` (one `fstat`, whose status `seen` may stand in for:
    /// a test seam) as ``BlobStreamError/sourceChanged(resource:offset:reason:)`` naming
    /// `resource`; a failed `fstat` names `path`.
    func change(
        since opened: stat, at offset: Int64, resource: String, path: String, seen: (stat) -> stat = { $0 }
    ) -> BlobStreamError? {
        switch descriptor.status() {
        case .failure(let error):
            return .system(resource: path, operation: "fstat", offset: offset, errno: error.rawValue)
        case .success(let now):
            return seen(now).change(since: opened).map { .sourceChanged(resource: resource, offset: offset, reason: $0) }
        }
    }

    /// A byte at `length` (one `pread`) as ``BlobStreamError/lengthExceeded(resource:length:)``
    /// naming `resource`: a size that lags the content; a failed `pread` names `path`.
    func bytesPast(_ length: Int64, resource: String, path: String) -> BlobStreamError? {
        switch hasBytes(at: length) {
        case .success(let more): return more ? .lengthExceeded(resource: resource, length: length) : nil
        case .failure(let error): return .system(resource: path, operation: "pread", offset: length, errno: error.rawValue)
        }
    }
}

/// Why ``OpenedFile/open(_:followFinalLink:)`` gave no descriptor.
enum RegularFileOpenError: Error, Equatable {
    /// `operation` (`open`, `fstat`, `fcntl`) failed with `errno`.
    case system(operation: String, errno: Errno)
    /// The path names a directory.
    case isDirectory
    /// The path names a FIFO, socket or device; `kind` says which (see `stat.kind`).
    case notRegularFile(kind: String)
}
