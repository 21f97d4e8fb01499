#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An open file descriptor (a file, a pipe end, a socket), closed exactly once: when the last
/// reference goes away.
///
/// Closing in `deinit` rather than in a `close()` method means that a call which still holds
/// the object can never run on a number the kernel has already handed to another file, and
/// nothing can close it twice. The system calls are methods, so the object is alive for the
/// whole call; the number itself never leaves this type. To close, let go of every reference.
package final class FileDescriptor: Sendable {
    let raw: Int32
    private let owned: Bool

    /// Takes ownership of `raw`, an open descriptor.
    package init(adopting raw: Int32) {
        self.raw = raw
        owned = true
    }

    /// Uses `raw` without owning it: it is never closed here, since whoever lent it (the shell,
    /// the caller) shares it.
    package init(borrowing raw: Int32) {
        self.raw = raw
        owned = false
    }

    deinit {
        if owned { systemClose(raw) }
    }

    /// The number, for a C library that keeps it (OpenSSL's socket BIO): whoever hands it over
    /// holds this object for as long as the library may use the number.
    package var lentRawValue: Int32 { raw }

    /// Standard output, borrowed: never closed here.
    package static let standardOutput = FileDescriptor(borrowing: STDOUT_FILENO)

    /// Standard error, borrowed: never closed here.
    package static let standardError = FileDescriptor(borrowing: STDERR_FILENO)

    /// Whether the descriptor is a terminal (`isatty(3)`).
    package var isTerminal: Bool { systemIsTerminal(raw) }

    /// The width in columns of the terminal this descriptor is, or `nil` when it is none (or
    /// does not say).
    package var terminalColumns: Int? {
        var size = winsize()
        guard case .success = valueOrErrno({ systemTerminalSize(raw, &size) }), size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// `open(2)` of `path` with `flags` (`O_CLOEXEC` is the caller's to pass), and `permissions`
    /// for a file that `O_CREAT` creates.
    package static func open(_ path: String, _ flags: Int32, permissions: mode_t = 0) -> Result<FileDescriptor, Errno> {
        valueOrErrno { systemOpen(path, flags, permissions) }.map(FileDescriptor.init(adopting:))
    }

    /// A pipe whose two ends are close-on-exec and non-blocking.
    package static func pipe() -> Result<(read: FileDescriptor, write: FileDescriptor), Errno> {
        var ends: [Int32] = [-1, -1]
        if let failure = nothingOrErrno({ systemPipe(&ends) }) { return .failure(failure) }
        let (read, write) = (FileDescriptor(adopting: ends[0]), FileDescriptor(adopting: ends[1]))
        if let failure = read.markCloseOnExecAndNonBlocking() ?? write.markCloseOnExecAndNonBlocking() {
            return .failure(failure)
        }
        return .success((read, write))
    }

    /// A `socket(2)` of `family`, `type` and `proto`, close-on-exec and non-blocking: every wait
    /// is a ``poll(for:orWakeUpFrom:milliseconds:)`` with a deadline and a wake-up descriptor.
    package static func socket(family: Int32, type: Int32, proto: Int32) -> Result<FileDescriptor, Errno> {
        valueOrErrno { systemSocket(family, type, proto) }.flatMap { raw in
            let socket = FileDescriptor(adopting: raw)
            #if os(Linux)
            return .success(socket)
            #else
            return socket.markCloseOnExecAndNonBlocking().map(Result.failure) ?? .success(socket)
            #endif
        }
    }

    /// One `read(2)` at the current position; the byte count (0 at the end), or `errno`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        valueOrErrno { systemRead(raw, buffer) }
    }

    /// One `pread(2)` at `offset`; the byte count (0 at the end of the file), or `errno`.
    package func pread(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Errno> {
        valueOrErrno { systemPread(raw, buffer, offset) }
    }

    /// One `write(2)` at the current position; the byte count, or `errno`.
    package func write(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        valueOrErrno { systemWrite(raw, bytes) }
    }

    /// Writes all of `bytes` at the current position; `nil`, or `errno`.
    package func writeAll(_ bytes: UnsafeRawBufferPointer) -> Errno? {
        var written = 0
        while written < bytes.count {
            switch write(UnsafeRawBufferPointer(rebasing: bytes[written...])) {
            case .success(let count): written += count
            case .failure(let failure): return failure
            }
        }
        return nil
    }

    /// Writes one byte to wake up a ``poll(for:orWakeUpFrom:milliseconds:)`` of the pipe's
    /// other end; a full pipe already wakes it, so a failure needs no answer.
    package func wakeUp() {
        var byte: UInt8 = 1
        _ = withUnsafeBytes(of: &byte) { write($0) }
    }

    /// `fstat(2)`: the status of the open file, or `errno`.
    package func status() -> Result<stat, Errno> {
        var status = stat()
        return valueOrErrno { systemFstat(raw, &status) }.map { _ in status }
    }

    /// `fsync(2)`, so the file's bytes are on disk before, say, a rename makes them visible.
    package func sync() -> Errno? {
        nothingOrErrno { systemFsync(raw) }
    }

    /// Takes an exclusive `flock(2)` on the file, held until the last descriptor of this open
    /// is closed (the object goes away), trying every 10 ms for at most `seconds`: a holder
    /// that is stopped (Ctrl-Z) or stuck never holds the caller for good. A process that dies
    /// releases it. Fails with an `isWouldBlock` errno when the time ran out.
    package func lockExclusively(waitingAtMost seconds: Double) -> Errno? {
        var triesLeft = max(1, Int(seconds * 100))
        while true {
            let failure = nothingOrErrno { systemLock(raw, LOCK_EX | LOCK_NB) }
            triesLeft -= 1
            guard let failure, failure.isWouldBlock, triesLeft > 0 else { return failure }
            usleep(10_000)
        }
    }

    /// Whether `O_NONBLOCK` is set: a read or write then never waits; `nil` when `fcntl` fails.
    package var isNonBlocking: Bool? {
        guard case .success(let flags) = valueOrErrno({ systemGetFlags(raw, F_GETFL) }) else { return nil }
        return flags & O_NONBLOCK != 0
    }

    /// Sets or clears `O_NONBLOCK`.
    package func setNonBlocking(_ nonBlocking: Bool) -> Errno? {
        switch valueOrErrno({ systemGetFlags(raw, F_GETFL) }) {
        case .failure(let failure):
            return failure
        case .success(let flags):
            let wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK
            return wanted == flags ? nil : nothingOrErrno { systemSetFlags(raw, F_SETFL, wanted) }
        }
    }

    /// Sets `FD_CLOEXEC` (no descriptor leaks into a spawned process) and `O_NONBLOCK`.
    private func markCloseOnExecAndNonBlocking() -> Errno? {
        nothingOrErrno { systemSetFlags(raw, F_SETFD, FD_CLOEXEC) } ?? setNonBlocking(true)
    }
}
