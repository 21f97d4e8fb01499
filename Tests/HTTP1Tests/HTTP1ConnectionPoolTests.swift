import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTP1
import Testing

/// The pool of kept-alive connections stays bounded: per endpoint, in all (least recently used
/// first), and in time. Each connection is a real one to a loopback listener, so a connection
/// the pool lets go is seen closed by its peer.
@Suite struct HTTP1ConnectionPoolTests {
    typealias Listener = HTTP1ConnectionTests.Listener

    /// Whether `peer` sees its connection closed within a second (an end of stream).
    static func closed(_ peer: Int32) -> Bool {
        var descriptor = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 1000) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(peer, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    static func endpoint(_ index: Int) -> HTTP1Endpoint {
        HTTP1Endpoint(host: "host-\(index).example", port: 80, isSecure: false)
    }

    @Test func thePoolKeepsAtMostItsTotalAndClosesTheLeastRecentlyUsed() throws {
        let listener = try Listener()
        let pool = HTTP1ConnectionPool(limit: 4, totalLimit: 8)
        var peers: [Int32] = []
        defer { peers.forEach { close($0) } }
        var connections: [HTTP1Connection] = []
        for index in 0..<20 {
            let (connection, peer) = try listener.connectedPair()
            peers.append(peer)
            connections.append(connection)
            pool.put(connection, for: Self.endpoint(index), trust: TLSConfiguration())
        }
        #expect(pool.idleCount == 8)
        #expect(peers[0..<12].allSatisfy(Self.closed), "the twelve put first were closed")
        #expect(pool.take(Self.endpoint(3), trust: TLSConfiguration()) == nil)
        let kept = pool.take(Self.endpoint(12), trust: TLSConfiguration())
        #expect(kept === connections[12])
    }

    @Test func anEndpointKeepsAtMostItsLimit() throws {
        let listener = try Listener()
        let pool = HTTP1ConnectionPool(limit: 2)
        let pairs = try (0..<3).map { _ in try listener.connectedPair() }
        defer { pairs.forEach { close($0.peer) } }
        for pair in pairs { pool.put(pair.connection, for: Self.endpoint(0), trust: TLSConfiguration()) }
        #expect(pool.idleCount == 2)
        #expect(Self.closed(pairs[2].peer), "the one past the limit is closed, not left to its last holder")
    }

    @Test func aConnectionIdleLongerThanTheMaximumIsClosedNotHandedOut() async throws {
        let listener = try Listener()
        let pool = HTTP1ConnectionPool(limit: 4, maxIdleSeconds: 0.2)
        let (connection, peer) = try listener.connectedPair()
        defer { close(peer) }
        pool.put(connection, for: Self.endpoint(0), trust: TLSConfiguration())
        #expect(pool.take(Self.endpoint(0), trust: TLSConfiguration()) === connection, "fresh, it is handed out")
        pool.put(connection, for: Self.endpoint(0), trust: TLSConfiguration())
        try await Task.sleep(for: .milliseconds(400))
        // Any use of the pool sweeps every endpoint, not only the one asked for.
        #expect(pool.take(Self.endpoint(1), trust: TLSConfiguration()) == nil)
        #expect(pool.idleCount == 0)
        #expect(Self.closed(peer))
        #expect(pool.take(Self.endpoint(0), trust: TLSConfiguration()) == nil)
    }
}
