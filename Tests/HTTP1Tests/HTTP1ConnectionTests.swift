import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTP1
import Testing

/// The connection against a loopback listener the test drives by hand: cancellation from
/// another thread, deadlines, descriptors, and answers read across interim replies and
/// kept-alive reuse.
@Suite struct HTTP1ConnectionTests {
    /// A listening socket on 127.0.0.1 whose accepted connections the test writes to.
    final class Listener: @unchecked Sendable {
        let fd: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard fd >= 0, ok else { throw POSIXError(.EADDRNOTAVAIL) }
            self.fd = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(fd) }

        /// Accepts one connection and returns its descriptor.
        func accept() -> Int32 { Glibc.accept(fd, nil, nil) }

        /// A connection to this listener, and the accepted peer's descriptor (the caller closes it).
        func connectedPair() throws -> (connection: HTTP1Connection, peer: Int32) {
            let connection = HTTP1Connection()
            try connection.connect(host: "127.0.0.1", port: port, wait: .after(5))
            return (connection, accept())
        }

        /// Writes `text` to `peer`.
        static func write(_ text: String, to peer: Int32) {
            _ = Array(text.utf8).withUnsafeBytes { send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// The number of open descriptors of the process.
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    @Test func cancelFromAnotherThreadEndsAWaitingReceive() async throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        defer { close(peer) }
        let canceller = Thread { usleep(100_000); connection.cancel() }
        canceller.start()
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(throws: HTTP1Error.cancelled) {
            _ = try buffer.withUnsafeMutableBytes { try connection.receive(into: $0, wait: .after(30)) }
        }
        #expect(connection.isCancelled)
        #expect(throws: HTTP1Error.cancelled) { try connection.send(Array("x".utf8), wait: .after(1)) }
    }

    @Test func aSilentPeerIsATimeout() throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        defer { close(peer) }
        #expect(throws: HTTP1Error.timedOut) { _ = try connection.readAnswer(method: "GET", wait: .pace(HTTP1Pace(minimumBytesPerSecond: 0, seconds: 1, silence: 0.05)), keepingAtMost: 10) }
    }

    /// A peer that sends one byte every 50 ms is below a minimum of 100 bytes/s over 0.5 s:
    /// the pace fails, naming the rate, although no silence ever reaches its 5 s.
    @Test func aTricklingPeerIsTooSlowForAPace() throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        // The writer closes the peer itself, once the connection is gone (a send fails) or
        // after its 100 bytes: closed here, its number could be reused while it still writes.
        let writer = Thread {
            defer { close(peer) }
            for _ in 0..<100 {
                Thread.sleep(forTimeInterval: 0.05)
                guard send(peer, "x", 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            }
        }
        writer.start()
        let wait = HTTP1Wait.pace(HTTP1Pace(minimumBytesPerSecond: 100, seconds: 0.5, silence: 5))
        var buffer = [UInt8](repeating: 0, count: 16)
        var received = 0
        let error = #expect(throws: HTTP1Error.self) {
            while true { received += try buffer.withUnsafeMutableBytes { try connection.receive(into: $0, wait: wait) } }
        }
        guard case .tooSlow(let bytes, _, 100)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(bytes < 100 && received < 100, "the whole trickle was waited for")
        #expect(error?.reason.contains("bytes/s") == true)
        connection.cancel()
    }

    @Test func nothingListeningIsRefused() throws {
        let port = try Listener().port // closed again at once
        #expect {
            try HTTP1Connection().connect(host: "127.0.0.1", port: port, wait: .after(5))
        } throws: { error in
            guard case .network(_, .refused) = error as? HTTP1Error else { return false }
            return true
        }
    }

    /// 100 connections (3 descriptors each) and 20 failed ones: a leak of even one descriptor
    /// each would show as 100 more; the margin is for other tests of the process running
    /// alongside.
    @Test func connectionsLeaveNoDescriptorsBehind() throws {
        let listener = try Listener()
        let before = Self.openDescriptors()
        for _ in 0..<100 {
            let connection = HTTP1Connection()
            try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
            close(listener.accept())
            connection.cancel()
        }
        for _ in 0..<20 {
            _ = try? HTTP1Connection().connect(host: "no-such-host.invalid", port: 80, wait: .after(5))
        }
        #expect(Self.openDescriptors() < before + 50)
    }

    /// 100 Continue and 103 Early Hints are skipped; the body ends at its length, so the
    /// connection carries the next answer; 101 is an answer of its own.
    @Test func interimRepliesAreSkippedAndTheConnectionIsReused() throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        defer { close(peer) }
        Listener.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", to: peer)
        let first = try connection.readAnswer(method: "GET", wait: .after(5), keepingAtMost: 100)
        #expect(first.head.statusCode == 200 && first.body == Array("hello".utf8) && first.reusable)
        Listener.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", to: peer)
        let second = try connection.readAnswer(method: "GET", wait: .after(5), keepingAtMost: 100)
        #expect(second.head.statusCode == 101)
        #expect(!second.reusable, "after 101 the connection no longer speaks HTTP/1.1")
    }

    /// A server that sends interim answers without end is refused after a few, instead of
    /// holding the reader for good (each one restarts the wait for silence).
    @Test func endlessInterimAnswersAreAProtocolViolation() throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        defer { close(peer) }
        Listener.write(String(repeating: "HTTP/1.1 102 Processing\r\n\r\n", count: HTTP1Connection.maxInterimHeads + 1), to: peer)
        #expect {
            _ = try connection.readAnswer(method: "GET", wait: .after(5), keepingAtMost: 100)
        } throws: { error in
            guard case .protocolViolation(let reason) = error as? HTTP1Error else { return false }
            return reason.contains("interim")
        }
    }

    /// Bytes after the end of a body are not the start of a next answer this client asked for:
    /// such a connection is not used again.
    @Test func bytesAfterTheBodyMakeTheConnectionUnusable() throws {
        let listener = try Listener()
        let connection = HTTP1Connection()
        try connection.connect(host: "127.0.0.1", port: listener.port, wait: .after(5))
        let peer = listener.accept()
        defer { close(peer) }
        Listener.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", to: peer)
        let answer = try connection.readAnswer(method: "GET", wait: .after(5), keepingAtMost: 100)
        #expect(answer.body == Array("ok".utf8))
        #expect(!answer.reusable)
    }
}
