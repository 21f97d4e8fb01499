#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin, EINTR-safe wrappers over the few system calls the file source needs. They return the
/// raw result and `errno`, leaving the policy (which error to report) to the caller.
enum Syscall {
    /// `open(path, O_RDONLY | O_CLOEXEC)`; the descriptor, or `errno` on failure.
    static func openReadOnly(_ path: String) -> Result<Int32, Errno> {
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { return .success(fd) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `fstat(fd)`; the status, or `errno` on failure.
    static func fileStatus(_ fd: Int32) -> Result<stat, Errno> {
        var status = stat()
        if fstat(fd, &status) == 0 { return .success(status) }
        return .failure(Errno(errno))
    }

    /// `stat(path)` following symbolic links; the status, or `errno` on failure.
    static func fileStatus(atPath path: String) -> Result<stat, Errno> {
        var status = stat()
        if stat(path, &status) == 0 { return .success(status) }
        return .failure(Errno(errno))
    }

    /// One `pread`, retried on EINTR; the byte count (0 at end of file), or `errno`.
    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Errno> {
        while true {
            #if canImport(Glibc) || canImport(Musl)
            let count = Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            #else
            let count = Darwin.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            #endif
            if count >= 0 { return .success(count) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `close(fd)`, ignoring the result: a read-only descriptor loses no data on close.
    static func close(_ fd: Int32) {
        #if canImport(Glibc) || canImport(Musl)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }
}

/// A C `errno` value, typed so it cannot be confused with a byte count.
struct Errno: Error, Equatable {
    var rawValue: Int32
    init(_ rawValue: Int32) { self.rawValue = rawValue }
}

extension stat {
    /// Whether this is a directory.
    var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    /// Whether this is a regular file.
    var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
    /// Device, inode, size and modification time: changes when the file is replaced or rewritten.
    var versionToken: String {
        "\(st_dev):\(st_ino):\(st_size):\(st_mtim.tv_sec).\(st_mtim.tv_nsec)"
    }
}
