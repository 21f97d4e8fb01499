import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a socket operation failed: the operation, and the system's reason.
struct SocketError: Error, Sendable {
    var reason: String
    /// The `URLError.Code` this failure corresponds to, so both transports report alike.
    var code: URLError.Code

    init(_ operation: String, errno code: Int32) {
        // A send or receive timeout shows as EAGAIN, whose text ("resource temporarily
        // unavailable") would mislead.
        reason = code == EAGAIN ? "\(operation): timed out" : "\(operation): \(String(cString: strerror(code)))"
        switch code {
        case EAGAIN, ETIMEDOUT: self.code = .timedOut
        case ECONNREFUSED: self.code = .cannotConnectToHost
        default: self.code = .networkConnectionLost
        }
    }

    init(_ reason: String, code: URLError.Code) {
        self.reason = reason
        self.code = code
    }
}

/// One blocking TCP connection, with a timeout on every send and receive (each call that
/// waits longer fails, so it bounds silence, not the length of a transfer). ``shutdown()``
/// may be called from any thread and makes a blocked call return at once; everything else is
/// called by one thread at a time.
final class SocketConnection: @unchecked Sendable {
    private let descriptor: Int32
    /// Whether the connection has carried a complete request and answer, so a failure of the
    /// next request may only mean the server closed it while it was idle.
    var hasBeenUsed = false

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        _ = systemClose(descriptor)
    }

    /// Connects to `host`:`port` (every address it resolves to, in order), waiting at most
    /// `timeout` seconds for each.
    static func connect(host: String, port: Int, timeout: TimeInterval) throws(SocketError) -> SocketConnection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw SocketError("cannot resolve \(host): \(String(cString: gai_strerror(status)))", code: .cannotFindHost)
        }
        defer { freeaddrinfo(list) }
        var lastError = SocketError("no address for \(host)", code: .cannotFindHost)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            do {
                return try connect(to: address.pointee, timeout: timeout)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// The longest wait the system calls are given: URLSession's `timeoutIntervalForRequest`
    /// may be 0, negative or infinite for "no limit", or too large for `poll`'s `Int32`
    /// milliseconds.
    static let longestWait: TimeInterval = 86_400

    /// `timeout` as a wait the system calls can take: "no limit" (0, negative, NaN, infinite)
    /// and anything longer become ``longestWait``, anything shorter than 1 ms becomes 1 ms
    /// (a 0 wait would mean "never" to `SO_RCVTIMEO` but "at once" to `poll`).
    static func boundedWait(_ timeout: TimeInterval) -> TimeInterval {
        guard timeout.isFinite, timeout > 0 else { return longestWait }
        return min(max(timeout, 0.001), longestWait)
    }

    private static func connect(to address: addrinfo, timeout: TimeInterval) throws(SocketError) -> SocketConnection {
        let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), address.ai_protocol)
        guard fd >= 0 else { throw SocketError("socket", errno: errno) }
        let connection = SocketConnection(descriptor: fd)
        // Non-blocking only while connecting, so the wait can be bounded with poll.
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if systemConnect(fd, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else { throw SocketError("connect", errno: errno) }
            try waitUntilWritable(fd, timeout: timeout)
            var failure: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size)
            if failure != 0 { throw SocketError("connect", errno: failure) }
        }
        _ = fcntl(fd, F_SETFL, flags)
        let bounded = boundedWait(timeout)
        var wait = timeval(tv_sec: Int(bounded), tv_usec: Int(bounded.truncatingRemainder(dividingBy: 1) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return connection
    }

    /// Waits until the connecting socket `fd` is writable, at most `timeout` seconds in all,
    /// across interrupted waits.
    private static func waitUntilWritable(_ fd: Int32, timeout: TimeInterval) throws(SocketError) {
        let bounded = boundedWait(timeout)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(bounded * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let remaining = now < deadline ? Int32((deadline - now + 999_999) / 1_000_000) : 0
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, remaining)
            if ready > 0 { return }
            if ready == 0 { throw SocketError("connect: timed out after \(bounded) s", code: .timedOut) }
            if errno != EINTR { throw SocketError("poll", errno: errno) }
        }
    }

    /// Sends every byte of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer) throws(SocketError) {
        var sent = 0
        while sent < bytes.count {
            let count = systemSend(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            if count > 0 {
                sent += count
            } else if count < 0, errno == EINTR {
                continue
            } else {
                throw SocketError("send", errno: count < 0 ? errno : EPIPE)
            }
        }
    }

    /// Receives at most `buffer.count` bytes; 0 means the peer closed the connection.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws(SocketError) -> Int {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno != EINTR { throw SocketError("receive", errno: errno) }
        }
    }

    /// Receives at most `maximum` bytes; an empty array means the peer closed the connection.
    func receive(upTo maximum: Int) throws(SocketError) -> [UInt8] {
        var failure: SocketError?
        let bytes = [UInt8](unsafeUninitializedCapacity: maximum) { buffer, initialized in
            do throws(SocketError) {
                initialized = try receive(into: UnsafeMutableRawBufferPointer(buffer))
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Ends both directions: a send or receive blocked in another thread returns at once.
    func shutdown() {
        _ = systemShutdown(descriptor, Int32(SHUT_RDWR))
    }
}

// The system calls whose names the connection's own members shadow, reached from file scope
// so that no C module has to be named.
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}
private func systemShutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }
