#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file descriptor, closed exactly once: when the last reference goes away.
///
/// Closing in `deinit` rather than in a `close()` method means a read that still holds the
/// object can never run on a number the kernel has already handed to another file. The system
/// calls are methods, so the object is alive for the whole call; never take the number out.
final class FileDescriptor: Sendable {
    private let raw: Int32

    /// Takes ownership of `raw`, an open descriptor.
    init(adopting raw: Int32) {
        self.raw = raw
    }

    deinit {
        // Not retried on EINTR: the descriptor is released either way, and a retry could close
        // a number reused meanwhile. A read-only descriptor loses no data on close.
        #if canImport(Glibc)
        _ = Glibc.close(raw)
        #elseif canImport(Musl)
        _ = Musl.close(raw)
        #else
        _ = Darwin.close(raw)
        #endif
    }

    /// `fstat`; the status, or `errno`.
    func status() -> Result<stat, Errno> {
        var status = stat()
        return Syscall.retrying { fstat(raw, &status) }.map { _ in status }
    }

    /// One `pread`, retried on EINTR; the byte count (0 at end of file), or `errno`.
    func pread(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Errno> {
        #if canImport(Glibc)
        Syscall.retrying { Glibc.pread(raw, buffer.baseAddress, buffer.count, off_t(offset)) }
        #elseif canImport(Musl)
        Syscall.retrying { Musl.pread(raw, buffer.baseAddress, buffer.count, off_t(offset)) }
        #else
        Syscall.retrying { Darwin.pread(raw, buffer.baseAddress, buffer.count, off_t(offset)) }
        #endif
    }

    /// One `read` at the current position, retried on EINTR; the byte count (0 at the end).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        #if canImport(Glibc)
        Syscall.retrying { Glibc.read(raw, buffer.baseAddress, buffer.count) }
        #elseif canImport(Musl)
        Syscall.retrying { Musl.read(raw, buffer.baseAddress, buffer.count) }
        #else
        Syscall.retrying { Darwin.read(raw, buffer.baseAddress, buffer.count) }
        #endif
    }

    /// Writes all of `bytes` at the current position; `nil`, or `errno`.
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> Errno? {
        var written = 0
        while written < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[written...])
            #if canImport(Glibc)
            let result = Syscall.retrying { Glibc.write(raw, rest.baseAddress, rest.count) }
            #elseif canImport(Musl)
            let result = Syscall.retrying { Musl.write(raw, rest.baseAddress, rest.count) }
            #else
            let result = Syscall.retrying { Darwin.write(raw, rest.baseAddress, rest.count) }
            #endif
            switch result {
            case .success(let count): written += count
            case .failure(let error): return error
            }
        }
        return nil
    }

    /// `fsync`, so the file's bytes are on disk before, say, a rename makes them visible.
    func sync() -> Errno? {
        if case .failure(let error) = Syscall.retrying({ fsync(raw) }) { return error }
        return nil
    }

    /// Clears `O_NONBLOCK`, which only served to open without blocking.
    func clearNonBlocking() -> Errno? {
        let flags = fcntl(raw, F_GETFL)
        guard flags >= 0 else { return Errno(errno) }
        if flags & O_NONBLOCK == 0 { return nil }
        return fcntl(raw, F_SETFL, flags & ~O_NONBLOCK) == 0 ? nil : Errno(errno)
    }
}
