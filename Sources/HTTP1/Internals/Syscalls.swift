#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The socket system calls of the HTTP/1.1 client, in one place, in the manner of
// apple/swift-system's Internals/Syscalls.swift: each wrapper is a file-scope function, so the
// calls resolve to the C library on every platform without naming its module (Glibc, Musl or
// Darwin), and ``valueOrErrno(_:)`` is the one place where EINTR is retried.

/// A failed system call's `errno`, with the text that names it.
struct Errno: Error, Equatable {
    var code: Int32

    /// The current thread's `errno`.
    static var current: Errno { Errno(code: errno) }

    var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }

    /// E.g. "Connection refused (errno 111)".
    var text: String { "\(String(cString: strerror(code))) (errno \(code))" }
}

/// Runs `call` until it is not interrupted by a signal; a negative result is the `errno` of
/// the call.
func valueOrErrno<Value: FixedWidthInteger>(_ call: () -> Value) -> Result<Value, Errno> {
    while true {
        let value = call()
        if value >= 0 { return .success(value) }
        let failure = Errno.current
        if failure.code != EINTR { return .failure(failure) }
    }
}

/// `close(2)`, exactly once per descriptor (see ``FileDescriptor``); EINTR is not retried,
/// because on Linux the descriptor is released even then, and a retry could close another
/// thread's new descriptor of the same number.
func systemClose(_ fd: Int32) {
    _ = close(fd)
}

/// `socket(2)` for `family`/`type`/`proto`, close-on-exec and non-blocking.
func systemSocket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Result<Int32, Errno> {
    valueOrErrno { socket(family, type, proto) }.flatMap { fd in
        markCloseOnExecAndNonBlocking(fd).map { fd }.mapError { failure in
            systemClose(fd)
            return failure
        }
    }
}

/// Sets `FD_CLOEXEC` (no descriptor leaks into a spawned process) and `O_NONBLOCK` (every wait
/// is a `poll` with a deadline and a cancellation descriptor).
func markCloseOnExecAndNonBlocking(_ fd: Int32) -> Result<Void, Errno> {
    valueOrErrno { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        .flatMap { _ in valueOrErrno { fcntl(fd, F_GETFL) } }
        .flatMap { flags in valueOrErrno { fcntl(fd, F_SETFL, flags | O_NONBLOCK) } }
        .map { _ in () }
}

/// A pipe whose two ends are close-on-exec and non-blocking: (read end, write end).
func systemPipe() -> Result<(Int32, Int32), Errno> {
    var ends: [Int32] = [-1, -1]
    return valueOrErrno { pipe(&ends) }.flatMap { _ in
        for fd in ends {
            if case .failure(let failure) = markCloseOnExecAndNonBlocking(fd) {
                ends.forEach(systemClose)
                return .failure(failure)
            }
        }
        return .success((ends[0], ends[1]))
    }
}

/// `connect(2)`; on a non-blocking socket, EINPROGRESS is the usual answer.
func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Result<Void, Errno> {
    valueOrErrno { connect(fd, address, length) }.map { _ in () }
}

/// The pending error of a socket (`SO_ERROR`), e.g. the result of a non-blocking connect.
func systemSocketError(_ fd: Int32) -> Int32 {
    var code: Int32 = 0
    var size = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size) == 0 else { return errno }
    return code
}

/// Sets an `Int32` socket option; failures are ignored (the options are optimisations).
func systemSetOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
    var value = value
    _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
}

/// `send(2)` that never raises SIGPIPE: a peer that closed gives EPIPE (MSG_NOSIGNAL here,
/// SO_NOSIGPIPE on the socket on Darwin).
func systemSend(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
    #if canImport(Darwin)
    valueOrErrno { send(fd, bytes.baseAddress, bytes.count, 0) }
    #else
    valueOrErrno { send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    #endif
}

/// `recv(2)`; 0 means the peer closed its side.
func systemReceive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
    valueOrErrno { recv(fd, buffer.baseAddress, buffer.count, 0) }
}

/// `write(2)` of one byte, for waking a `poll`; a full pipe is already a wake-up.
func systemWakeUp(_ fd: Int32) {
    var byte: UInt8 = 1
    _ = valueOrErrno { write(fd, &byte, 1) }
}

/// `poll(2)` of `fds` for at most `milliseconds`; returns how many are ready.
func systemPoll(_ fds: inout [pollfd], _ milliseconds: Int32) -> Result<Int32, Errno> {
    valueOrErrno { poll(&fds, nfds_t(fds.count), milliseconds) }
}

/// The `socktype` of a stream socket, whose C type differs between Glibc and the others.
var streamSocketType: Int32 {
    #if canImport(Glibc)
    Int32(SOCK_STREAM.rawValue)
    #else
    SOCK_STREAM
    #endif
}
