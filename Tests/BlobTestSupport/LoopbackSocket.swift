import Glibc
import SystemCalls

/// The few TCP socket operations the test support needs, always on 127.0.0.1. Results carry
/// `errno` so callers can word their own errors.
public enum LoopbackSocket {
    /// A listening socket on 127.0.0.1 at an ephemeral port, and that port, for a test's
    /// scripted server.
    /// - Throws: ``TestSupportError`` with the `errno` message.
    public static func listening() throws -> (fd: Int32, port: UInt16) {
        try listening(on: LoopbackAddress.standard)
    }

    /// A listening socket on `address` (of 127.0.0.0/8) at an ephemeral port, and that port.
    /// - Throws: ``TestSupportError`` with the `errno` message.
    public static func listening(on address: LoopbackAddress) throws -> (fd: Int32, port: UInt16) {
        switch listen(on: address) {
        case .success(let listener): return listener
        case .failure(let error): throw TestSupportError("cannot listen on \(address.text): \(error.text)")
        }
    }

    /// A listening socket on `address` at an ephemeral port, and that port.
    static func listen(on host: LoopbackAddress = .standard) -> Result<(fd: Int32, port: UInt16), Errno> {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return .failure(Errno.current) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: 0, host: host)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else { return fail(closing: fd) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return fail(closing: fd) }
        return .success((fd, UInt16(bigEndian: address.sin_port)))
    }

    /// A non-blocking socket connected to `host`:`port` (127.0.0.1 by default), or the `errno`
    /// of the failure (`ETIMEDOUT` when nothing answered within `timeout` seconds).
    package static func connect(to host: LoopbackAddress = .standard, port: UInt16, timeout: Double) -> Result<Int32, Errno> {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return .failure(Errno.current) }
        setNonBlocking(fd)
        var address = loopbackAddress(port: port, host: host)
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started == 0 { return .success(fd) }
        guard errno == EINPROGRESS else { return fail(closing: fd) }
        var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) == 1 else {
            Glibc.close(fd)
            return .failure(Errno(ETIMEDOUT))
        }
        var pending: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length)
        guard pending == 0 else {
            Glibc.close(fd)
            return .failure(Errno(pending))
        }
        return .success(fd)
    }

    /// Accepts one pending connection of a listening socket, made non-blocking.
    static func accept(_ listener: Int32) -> Int32? {
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        setNonBlocking(fd)
        return fd
    }

    /// Closes with a zero linger time, so the peer gets a reset instead of an orderly end:
    /// that is what a crashed server or a broken network looks like to a client.
    static func closeAbruptly(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
    }

    /// Close-on-exec: a child another test spawns must not keep a test's connection open.
    private static let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    private static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private static func loopbackAddress(port: UInt16, host: LoopbackAddress = .standard) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = host.value.bigEndian
        return address
    }

    private static func fail<T>(closing fd: Int32) -> Result<T, Errno> {
        let error = Errno.current
        Glibc.close(fd)
        return .failure(error)
    }
}

/// An IPv4 address of the loopback network, 127.0.0.0/8, all of which Linux routes to `lo`.
public struct LoopbackAddress: Sendable {
    /// The address in host byte order.
    public let value: UInt32

    /// 127.0.0.1.
    public static let standard = LoopbackAddress(value: 0x7F00_0001)

    /// A random address of 127.0.0.0/8 other than 127.0.0.1: a listener there is reached only
    /// by a client given its URL. Another test's client retrying a port of 127.0.0.1, which the
    /// kernel may hand to a new listener, never connects to it.
    public static func random() -> LoopbackAddress {
        var generator = SystemRandomNumberGenerator()
        return LoopbackAddress(value: 0x7F00_0000 | UInt32.random(in: 0x01_0101...0xFE_FEFE, using: &generator))
    }

    /// The dotted form, for URLs.
    public var text: String {
        "\(value >> 24).\((value >> 16) & 0xFF).\((value >> 8) & 0xFF).\(value & 0xFF)"
    }
}
