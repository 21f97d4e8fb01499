#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin, EINTR-safe wrappers over the path-level system calls of the file source and the asset
/// store. Calls on an open descriptor are methods of ``FileDescriptor``. They return the raw
/// result and `errno`, leaving the policy (which error to report) to the caller.
enum Syscall {
    /// Runs `call` again while it fails with EINTR; its non-negative result, or `errno`.
    static func retrying<T: BinaryInteger>(_ call: () -> T) -> Result<T, Errno> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// Opens `path` for reading if it is a regular file, without ever blocking in `open(2)`.
    ///
    /// A FIFO without a writer blocks a plain `open` for good, beyond any timeout, so the file
    /// is opened with `O_NONBLOCK`, its type is taken from the descriptor (not from the path,
    /// which could be swapped in between), and only then is `O_NONBLOCK` cleared again.
    /// - Parameter followFinalLink: `false` refuses a symbolic link in the last component
    ///   (`ELOOP`) instead of following it.
    static func openRegularFile(_ path: String, followFinalLink: Bool = true) -> Result<OpenedFile, RegularFileOpenError> {
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followFinalLink ? 0 : O_NOFOLLOW)
        let descriptor: FileDescriptor
        switch retrying({ open(path, flags) }) {
        case .success(let fd):
            descriptor = FileDescriptor(adopting: fd)
        case .failure(let error):
            // A socket (or a device without a driver) cannot be opened at all: say what it is.
            if error.rawValue == ENXIO, case .success(let status) = fileStatus(atPath: path), !status.isRegularFile {
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
        if let error = descriptor.clearNonBlocking() { return .failure(.system(operation: "fcntl", errno: error)) }
        return .success(OpenedFile(descriptor: descriptor, status: status))
    }

    /// Creates `path`, which must not exist, for writing.
    static func createExclusive(_ path: String) -> Result<FileDescriptor, Errno> {
        retrying { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }.map(FileDescriptor.init(adopting:))
    }

    /// `stat(path)` following symbolic links; the status, or `errno` on failure.
    static func fileStatus(atPath path: String) -> Result<stat, Errno> {
        var status = stat()
        return retrying { stat(path, &status) }.map { _ in status }
    }

    /// `lstat(path)`: the status of the path itself, not of what a link points to.
    static func linkStatus(_ path: String) -> Result<stat, Errno> {
        var status = stat()
        return retrying { lstat(path, &status) }.map { _ in status }
    }

    /// `rename(from, to)`: atomically makes `to` name the file `from` named, replacing any file.
    static func rename(_ from: String, to: String) -> Errno? {
        #if canImport(Glibc)
        let result = Glibc.rename(from, to)
        #elseif canImport(Musl)
        let result = Musl.rename(from, to)
        #else
        let result = Darwin.rename(from, to)
        #endif
        return result == 0 ? nil : Errno(errno)
    }

    /// `unlink(path)`; removes a link itself, never what it points to.
    static func unlink(_ path: String) -> Errno? {
        #if canImport(Glibc)
        let result = Glibc.unlink(path)
        #elseif canImport(Musl)
        let result = Musl.unlink(path)
        #else
        let result = Darwin.unlink(path)
        #endif
        return result == 0 ? nil : Errno(errno)
    }
}

/// A regular file opened by ``Syscall/openRegularFile(_:followFinalLink:)``, with its status as
/// of the open.
struct OpenedFile: Sendable {
    /// The descriptor, open for reading, blocking mode.
    let descriptor: FileDescriptor
    /// The status `fstat` gave right after the open: the version that was opened.
    let status: stat
}

/// Why ``Syscall/openRegularFile(_:followFinalLink:)`` gave no descriptor.
enum RegularFileOpenError: Error, Equatable {
    /// `operation` (`open`, `fstat`, `fcntl`) failed with `errno`.
    case system(operation: String, errno: Errno)
    /// The path names a directory.
    case isDirectory
    /// The path names a FIFO, socket or device; `kind` says which (see ``stat/kind``).
    case notRegularFile(kind: String)
}

/// A C `errno` value, typed so it cannot be confused with a byte count.
struct Errno: Error, Equatable {
    var rawValue: Int32
    init(_ rawValue: Int32) { self.rawValue = rawValue }
}
