#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The layer of system calls, in the manner of apple/swift-system's
// Internals/Syscalls.swift: each C call is wrapped once, by a file-scope function here, where
// its name resolves to the C library on every platform without naming the module (Glibc, Musl
// or Darwin) and without being shadowed by a method of the same name (`read`, `pread`, `open`).
// ``valueOrErrno(_:)`` is the one place where EINTR is retried. Everything else in the package
// calls ``FileDescriptor``'s methods or ``FileSystem``.

/// Runs `call` again while a signal interrupts it; its non-negative result, or the `errno` of a
/// negative one.
package func valueOrErrno<Value: FixedWidthInteger>(_ call: () -> Value) -> Result<Value, Errno> {
    while true {
        let value = call()
        if value >= 0 { return .success(value) }
        let failure = Errno.current
        if failure.rawValue != EINTR { return .failure(failure) }
    }
}

/// `valueOrErrno` for calls whose result says nothing beyond success.
func nothingOrErrno<Value: FixedWidthInteger>(_ call: () -> Value) -> Errno? {
    if case .failure(let failure) = valueOrErrno(call) { return failure }
    return nil
}

func systemOpen(_ path: String, _ flags: Int32, _ permissions: mode_t) -> Int32 {
    open(path, flags, permissions)
}

/// `close(2)` is never retried on EINTR: on Linux the descriptor is released even then, and a
/// retry could close a number another thread was given meanwhile.
func systemClose(_ fd: Int32) {
    _ = close(fd)
}

func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    read(fd, buffer.baseAddress, buffer.count)
}

func systemPread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) -> Int {
    pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
}

func systemWrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    write(fd, bytes.baseAddress, bytes.count)
}

func systemFstat(_ fd: Int32, _ status: inout stat) -> Int32 {
    fstat(fd, &status)
}

func systemStat(_ path: String, _ status: inout stat) -> Int32 {
    stat(path, &status)
}

func systemLstat(_ path: String, _ status: inout stat) -> Int32 {
    lstat(path, &status)
}

func systemFsync(_ fd: Int32) -> Int32 {
    fsync(fd)
}

func systemRename(_ from: String, _ to: String) -> Int32 {
    rename(from, to)
}

func systemUnlink(_ path: String) -> Int32 {
    unlink(path)
}

func systemMakeDirectory(_ path: String, _ permissions: mode_t) -> Int32 {
    mkdir(path, permissions)
}

/// `flock(2)`: a lock on the open file description, so two opens of one file (by two
/// threads or two processes) exclude each other; released when the last descriptor closes.
func systemLock(_ fd: Int32, _ operation: Int32) -> Int32 {
    flock(fd, operation)
}

func systemGetFlags(_ fd: Int32, _ command: Int32) -> Int32 {
    fcntl(fd, command)
}

func systemSetFlags(_ fd: Int32, _ command: Int32, _ value: Int32) -> Int32 {
    fcntl(fd, command, value)
}

func systemPipe(_ ends: UnsafeMutablePointer<Int32>) -> Int32 {
    pipe(ends)
}

func systemPoll(_ fds: UnsafeMutablePointer<pollfd>, _ count: Int, _ milliseconds: Int32) -> Int32 {
    poll(fds, nfds_t(count), milliseconds)
}

/// `socket` created close-on-exec and non-blocking at once where Linux allows it, so no child
/// that another thread spawns meanwhile inherits it; elsewhere the caller sets the flags.
/// (Swift's Glibc has no `pipe2`: pipes get their flags just after they are made.)
func systemSocket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
    #if os(Linux)
    socket(family, type | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), proto)
    #else
    socket(family, type, proto)
    #endif
}

func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// `send(2)` that never raises SIGPIPE: a peer that closed gives EPIPE (MSG_NOSIGNAL here,
/// SO_NOSIGPIPE on the socket on Darwin).
func systemSend(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Darwin)
    send(fd, bytes.baseAddress, bytes.count, 0)
    #else
    send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #endif
}

func systemReceive(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
    recv(fd, buffer.baseAddress, buffer.count, 0)
}

func systemGetOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: inout Int32) -> Int32 {
    var size = socklen_t(MemoryLayout<Int32>.size)
    return getsockopt(fd, level, name, &value, &size)
}

func systemSetOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Int32 {
    var value = value
    return setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
}

func systemTerminalSize(_ fd: Int32, _ size: inout winsize) -> Int32 {
    ioctl(fd, UInt(TIOCGWINSZ), &size)
}

func systemIsTerminal(_ fd: Int32) -> Bool {
    isatty(fd) == 1
}

func systemIgnoreSignal(_ number: Int32) {
    _ = signal(number, SIG_IGN)
}

func systemDefaultSignal(_ number: Int32) {
    _ = signal(number, SIG_DFL)
}

func systemExitImmediately(_ status: Int32) -> Never {
    _exit(status)
}
