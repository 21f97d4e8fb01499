import Glibc

/// A port on 127.0.0.1 where nothing listens, kept so for as long as this object lives: a
/// socket bound to it without `listen` (and without `SO_REUSEADDR`, so no other socket of the
/// machine can bind it meanwhile). A connection is refused at once.
///
/// Why not the port of a server that was just stopped: a test that runs meanwhile may be
/// given the same ephemeral port for a server of its own, and the "nothing there" test then
/// talks to that one (an upload meant to fail once succeeded so).
public final class RefusingPort: Sendable {
    /// The port.
    public let port: UInt16
    private let fd: Int32

    /// Reserves an ephemeral port.
    /// - Throws: ``TestSupportError`` with the `errno` message.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw TestSupportError("cannot reserve a port on 127.0.0.1: \(message)")
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        close(fd)
    }
}
