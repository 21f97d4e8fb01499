#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// A TCP connection used by one thread with blocking calls that each have a deadline.
/// ``cancel()``, from any thread, makes the waiting call (and every later one) fail at once with
/// ``TCPConnection/Interruption/cancelled``: every wait polls a pipe that `cancel` writes to.
final class TCPConnection: Sendable {
    /// Why a call ended without doing its work.
    enum Interruption: Error, Equatable {
        /// ``cancel()`` was called.
        case cancelled
        /// The deadline passed.
        case timedOut
        /// A system call failed; `reason` names it and the error.
        case failed(reason: String)
    }

    private struct Descriptors {
        var socket: Int32 = -1
        var wakeRead: Int32 = -1
        var wakeWrite: Int32 = -1
        var cancelled = false
    }

    private let descriptors = Mutex(Descriptors())

    /// Creates an unconnected connection with its cancellation pipe.
    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for fd in ends {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
        }
        descriptors.withLock { $0.wakeRead = ends[0]; $0.wakeWrite = ends[1] }
    }

    deinit {
        let fds = descriptors.withLock { [$0.socket, $0.wakeRead, $0.wakeWrite] }
        for fd in fds where fd >= 0 { _ = Self.systemClose(fd) }
    }

    /// Interrupts the current and every later call. Idempotent, any thread.
    func cancel() {
        descriptors.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            var byte: UInt8 = 1
            _ = write(state.wakeWrite, &byte, 1)
        }
    }

    /// Resolves `host` and connects to the first address that accepts, by `deadline`.
    func connect(host: String, port: Int, deadline: DispatchTime) throws(Interruption) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .failed(reason: "cannot resolve host \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address for host \(host)"
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let candidate = address {
            address = candidate.pointee.ai_next
            try checkCancelled()
            let fd = socket(candidate.pointee.ai_family, candidate.pointee.ai_socktype, candidate.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = "socket: \(Self.describe(errno))"
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let adopted = descriptors.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                state.socket = fd
                return true
            }
            guard adopted else {
                _ = Self.systemClose(fd)
                throw .cancelled
            }
            if Self.systemConnect(fd, candidate.pointee.ai_addr, candidate.pointee.ai_addrlen) == 0 { return }
            if errno == EINPROGRESS {
                try wait(for: Int16(POLLOUT), deadline: deadline)
                var code: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                if getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &size) == 0 && code == 0 { return }
                lastError = "connect to \(host):\(port): \(Self.describe(code))"
            } else {
                lastError = "connect to \(host):\(port): \(Self.describe(errno))"
            }
            descriptors.withLock { $0.socket = -1 }
            _ = Self.systemClose(fd)
        }
        throw .failed(reason: lastError)
    }

    /// Sends all of `bytes` by `deadline`.
    func send(_ bytes: [UInt8], deadline: DispatchTime) throws(Interruption) {
        var sent = 0
        while sent < bytes.count {
            try wait(for: Int16(POLLOUT), deadline: deadline)
            let fd = descriptors.withLock { $0.socket }
            let count = bytes.withUnsafeBytes { buffer in
                Self.systemSend(fd, buffer.baseAddress! + sent, bytes.count - sent)
            }
            if count > 0 {
                sent += count
            } else if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                throw .failed(reason: "send: \(Self.describe(errno))")
            }
        }
    }

    /// Receives up to `buffer.count` bytes, waiting until `deadline` for the first; 0 means the
    /// peer closed the connection.
    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: DispatchTime) throws(Interruption) -> Int {
        while true {
            try wait(for: Int16(POLLIN), deadline: deadline)
            let fd = descriptors.withLock { $0.socket }
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                throw .failed(reason: "recv: \(Self.describe(errno))")
            }
        }
    }

    private func checkCancelled() throws(Interruption) {
        if descriptors.withLock({ $0.cancelled }) { throw .cancelled }
    }

    /// Polls the socket for `events` and the cancellation pipe, until `deadline`.
    private func wait(for events: Int16, deadline: DispatchTime) throws(Interruption) {
        let (fd, wake) = descriptors.withLock { ($0.socket, $0.wakeRead) }
        var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            try checkCancelled()
            let now = DispatchTime.now().uptimeNanoseconds
            let end = deadline.uptimeNanoseconds
            guard now < end else { throw .timedOut }
            let milliseconds = Int32(min((end - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .failed(reason: "poll: \(Self.describe(errno))")
            }
            if fds[1].revents != 0 { throw .cancelled }
            if fds[0].revents != 0 { return }
        }
    }

    private static func describe(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }

    private static func systemClose(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        Darwin.close(fd)
        #elseif canImport(Musl)
        Musl.close(fd)
        #else
        Glibc.close(fd)
        #endif
    }

    private static func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.connect(fd, address, length)
        #elseif canImport(Musl)
        Musl.connect(fd, address, length)
        #else
        Glibc.connect(fd, address, length)
        #endif
    }

    private static func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        // A peer that closed must give EPIPE, not a SIGPIPE that ends the process: MSG_NOSIGNAL
        // here, SO_NOSIGPIPE on the socket on Darwin.
        #if canImport(Darwin)
        Darwin.send(fd, bytes, count, 0)
        #elseif canImport(Musl)
        Musl.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #else
        Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }
}
