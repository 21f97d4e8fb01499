import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTP1
import SystemCalls
import Testing

/// A body read while it is sent (``HTTP1ProducedBody``): the peer gets exactly the produced
/// bytes, in pieces no larger than half the caller's buffer, even when the socket fills and the
/// next piece is read ahead; a producer that fails stops the body short and says so.
@Suite struct HTTP1ProducedBodyTests {
    typealias Listener = HTTP1ConnectionTests.Listener

    /// Reads `peer` until it has `count` bytes or the connection ends, slowly at first, so
    /// the sender's socket fills.
    private static func drain(_ peer: Int32, count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while received.count < count {
            if received.count < 1 << 20 { usleep(2_000) }
            let n = recv(peer, &chunk, chunk.count, 0)
            guard n > 0 else { break }
            received += chunk[0..<n]
        }
        return received
    }

    /// The byte at `offset` of the test body.
    private static func byte(at offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 131 &+ offset >> 9) }

    @Test func thePeerGetsExactlyTheProducedBytes() throws {
        let listener = try Listener()
        let (connection, peer) = try listener.connectedPair()
        defer { close(peer) }
        let length = 3 * 1024 * 1024 + 5
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 128 * 1024, alignment: 16)
        defer { storage.deallocate() }
        var produced = 0
        var largestPiece = 0
        let body = HTTP1ProducedBody(length: length, buffer: storage) { piece in
            largestPiece = max(largestPiece, piece.count)
            for index in 0..<piece.count { piece[index] = Self.byte(at: produced + index) }
            produced += piece.count
            return piece.count
        }
        let observed = LockedValue(0)
        // A thread of its own: the cooperative pool may be busy with other tests.
        let reader = LockedValue<[UInt8]?>(nil)
        let drained = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let bytes = Self.drain(peer, count: length)
            reader.withLock { $0 = bytes }
            drained.signal()
        }
        let complete = try connection.send(body, wait: .after(30), meter: HTTP1Meter(observe: { count in observed.withLock { $0 += count } }))
        #expect(drained.wait(timeout: .now() + 30) == .success)
        let received = try #require(reader.withLock { $0 })
        #expect(complete)
        #expect(largestPiece <= 64 * 1024)
        #expect(received.count == length)
        #expect(received == (0..<length).map(Self.byte(at:)))
        #expect(observed.withLock { $0 } == length)
    }

    @Test(arguments: [1, 2, 3])
    func aBufferOfAFewBytesStillSendsTheWholeBody(bufferSize: Int) throws {
        let listener = try Listener()
        let (connection, peer) = try listener.connectedPair()
        defer { close(peer) }
        let length = 10_001
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 1)
        defer { storage.deallocate() }
        var produced = 0
        let body = HTTP1ProducedBody(length: length, buffer: storage) { piece in
            for index in 0..<piece.count { piece[index] = Self.byte(at: produced + index) }
            produced += piece.count
            return piece.count
        }
        #expect(try connection.send(body, wait: .after(30), meter: nil))
        #expect(Self.drain(peer, count: length) == (0..<length).map(Self.byte(at:)))
    }

    @Test func aProducerThatFailsStopsTheBodyShort() throws {
        let listener = try Listener()
        let (connection, peer) = try listener.connectedPair()
        defer { close(peer) }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { storage.deallocate() }
        var produced = 0
        let body = HTTP1ProducedBody(length: 1 << 20, buffer: storage) { piece in
            guard produced < 100_000 else { return 0 }
            piece.initializeMemory(as: UInt8.self, repeating: 7)
            produced += piece.count
            return piece.count
        }
        let complete = try connection.send(body, wait: .after(30), meter: nil)
        connection.close()
        let received = Self.drain(peer, count: 1 << 20)
        #expect(!complete)
        #expect(received.count == produced, "only what was produced went out")
        #expect(received.count < 1 << 20)
    }
}
