#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// EINTR-safe wrappers over the system calls ``DirectoryAssetStore`` needs beyond the file
/// source's (``Syscall``): opening without following links, creating files exclusively,
/// copying, renaming and unlinking. They return `errno` and leave the policy to the caller.
enum AssetFileCalls {
    /// Opens `path` read-only without following a symbolic link in its last component (the
    /// open fails with `ELOOP` instead) and without blocking on a FIFO.
    static func openNoFollow(_ path: String) -> Result<Int32, Errno> {
        retrying { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) }
    }

    /// Opens `path` read-only without blocking on a FIFO (following links: the caller chose it).
    static func openSource(_ path: String) -> Result<Int32, Errno> {
        retrying { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
    }

    /// Creates `path`, which must not exist, for writing.
    static func createExclusive(_ path: String) -> Result<Int32, Errno> {
        retrying { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
    }

    /// `lstat(path)`: the status of the path itself, not of what a link points to.
    static func linkStatus(_ path: String) -> Result<stat, Errno> {
        var status = stat()
        if lstat(path, &status) == 0 { return .success(status) }
        return .failure(Errno(errno))
    }

    /// Copies everything from `source` (from its current position) to `destination`.
    /// - Returns: `nil`, or the failed operation's name and `errno`.
    static func copy(from source: Int32, to destination: Int32) -> (operation: String, errno: Errno)? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            switch retrying({ read(source, buffer.baseAddress, buffer.count) }) {
            case .success(let read): count = read
            case .failure(let error): return ("read", error)
            }
            if count == 0 { return nil }
            var written = 0
            while written < count {
                switch retrying({ write(destination, buffer.baseAddress! + written, count - written) }) {
                case .success(let chunk): written += chunk
                case .failure(let error): return ("write", error)
                }
            }
        }
    }

    /// `fsync(fd)`, so a renamed file's bytes are on disk before its name is.
    static func sync(_ fd: Int32) -> Errno? {
        if case .failure(let error) = retrying({ fsync(fd) }) { return error }
        return nil
    }

    /// `rename(from, to)`: atomically makes `to` name the file `from` named, replacing any file.
    static func rename(_ from: String, to: String) -> Errno? {
        #if canImport(Glibc) || canImport(Musl)
        let result = Glibc.rename(from, to)
        #else
        let result = Darwin.rename(from, to)
        #endif
        return result == 0 ? nil : Errno(errno)
    }

    /// `unlink(path)`; removes a link itself, never what it points to.
    static func unlink(_ path: String) -> Errno? {
        #if canImport(Glibc) || canImport(Musl)
        let result = Glibc.unlink(path)
        #else
        let result = Darwin.unlink(path)
        #endif
        return result == 0 ? nil : Errno(errno)
    }

    private static func retrying<T: BinaryInteger>(_ call: () -> T) -> Result<T, Errno> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }
}
