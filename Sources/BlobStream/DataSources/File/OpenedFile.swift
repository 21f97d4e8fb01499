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
