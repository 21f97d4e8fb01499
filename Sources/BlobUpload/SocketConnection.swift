import Foundation
import Glibc

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
        Glibc.close(descriptor)
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

    private static func connect(to address: addrinfo, timeout: TimeInterval) throws(SocketError) -> SocketConnection {
        let fd = socket(address.ai_family, address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), address.ai_protocol)
        guard fd >= 0 else { throw SocketError("socket", errno: errno) }
        let connection = SocketConnection(descriptor: fd)
        // Non-blocking only while connecting, so the wait can be bounded with poll.
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(fd, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else { throw SocketError("connect", errno: errno) }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(timeout * 1000))
            if ready == 0 { throw SocketError("connect: timed out after \(timeout) s", code: .timedOut) }
            if ready < 0 { throw SocketError("poll", errno: errno) }
            var failure: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size)
            if failure != 0 { throw SocketError("connect", errno: failure) }
        }
        _ = fcntl(fd, F_SETFL, flags)
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int(timeout.truncatingRemainder(dividingBy: 1) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return connection
    }

    /// Sends every byte of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer) throws(SocketError) {
        var sent = 0
        while sent < bytes.count {
            let count = Glibc.send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
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
        _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
    }
}
