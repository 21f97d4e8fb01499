@testable import BlobStream
import Foundation
import Testing

/// The HTTP source's buffer lends its free bytes to a receive that writes them outside the
/// source's lock. A loan must never let bytes land out of order, be overwritten by anyone
/// else, or reach the source after the transfer that took it was given up.
@Suite struct ReadAheadBufferLoanTests {
    private func write(_ bytes: [UInt8], to buffer: ReadAheadBuffer) -> Int {
        bytes.withUnsafeBytes { buffer.write($0) }
    }

    private func readAll(_ buffer: ReadAheadBuffer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: buffer.count)
        let count = out.withUnsafeMutableBytes { buffer.read(into: $0) }
        return Array(out[0..<count])
    }

    private func fill(_ loan: ReadAheadBuffer.Loan, from first: UInt8) {
        for index in 0..<loan.bytes.count { loan.bytes[index] = first &+ UInt8(truncatingIfNeeded: index) }
    }

    @Test func aLoanIsTheFreeRunAfterTheHeldBytesAndKeepsTheirOrder() throws {
        let buffer = ReadAheadBuffer(capacity: 16)
        #expect(write(Array(0..<10), to: buffer) == 10)
        buffer.discard(6)
        // Held: 6..<10 at storage 6..<10; the free run after them reaches the storage's end.
        let first = try #require(buffer.lend(limit: 100))
        #expect(first.bytes.count == 6)
        fill(first, from: 10)
        buffer.settle(first, keeping: 6)
        // Then the run wraps to the storage's start, up to the first held byte.
        let second = try #require(buffer.lend(limit: 100))
        #expect(second.bytes.count == 6)
        fill(second, from: 16)
        buffer.settle(second, keeping: 4)
        #expect(readAll(buffer) == Array(6..<20))
    }

    @Test func whileALoanIsOutNothingElseWritesAndTheRunStaysPut() throws {
        let buffer = ReadAheadBuffer(capacity: 16)
        _ = write([1, 2, 3, 4], to: buffer)
        let loan = try #require(buffer.lend(limit: 4))
        #expect(buffer.isLent)
        #expect(buffer.lend(limit: 4) == nil)
        #expect(write([9, 9], to: buffer) == 0)
        // The reader empties the buffer meanwhile: the run the receive writes must still be
        // where the next bytes go (an empty buffer would otherwise start over at the front).
        #expect(readAll(buffer) == [1, 2, 3, 4])
        fill(loan, from: 5)
        buffer.settle(loan, keeping: 3)
        #expect(!buffer.isLent)
        #expect(readAll(buffer) == [5, 6, 7])
    }

    @Test func aFullBufferLendsNothing() {
        let buffer = ReadAheadBuffer(capacity: 4)
        _ = write([1, 2, 3, 4], to: buffer)
        #expect(buffer.lend(limit: 4) == nil)
        #expect(ReadAheadBuffer(capacity: 4).lend(limit: 0) == nil)
    }

    @Test func aCopyHoldsTheSameBytesWithNoLoanOut() throws {
        let buffer = ReadAheadBuffer(capacity: 8)
        _ = write(Array(0..<8), to: buffer)
        buffer.discard(5)
        _ = write([8, 9, 10], to: buffer)  // wraps
        let loan = try #require(buffer.lend(limit: 8))
        let copy = buffer.copyHeldBytes()
        #expect(copy.capacity == 8)
        #expect(!copy.isLent)
        fill(loan, from: 200)
        buffer.settle(loan, keeping: loan.bytes.count)
        #expect(readAll(copy) == [5, 6, 7, 8, 9, 10])
    }

    /// A transfer cancelled with a loan out (a seek, a close) may still be inside its receive:
    /// the source goes on with a copy, and what that receive writes and reports is dropped.
    @Test func aCancelledTransfersLoanNeverReachesTheSource() throws {
        let url = URL(string: "http://127.0.0.1:9/blob")!
        let source = HTTPDataSource(url: url)
        let request = HTTPRangeRequest(url: url, first: 0, extraFields: [:], credentialFields: [])
        let lent = try source.state.withLock { s in
            s.isOpen = true
            s.buffer = ReadAheadBuffer(capacity: 16)
            _ = write([1, 2, 3], to: s.buffer!)
            s.transfer = HTTPDataSource.ActiveTransfer(
                id: 7, object: IdleTransfer(), request: request, usesURLSession: false, redirects: 0)
            return try #require(s.buffer!.lend(limit: 16))
        }
        source.state.withLock { s in
            var effects = HTTPDataSource.Effects()
            source.cancelTransfer(&s, &effects)
            #expect(s.buffer !== lent.buffer)
            #expect(s.buffer?.count == 3)
            s.isOpen = false  // nothing may start another transfer in this test
        }
        fill(lent, from: 100)
        #expect(source.transfer(7, received: lent.bytes.count, into: lent) == false)
        let held = source.state.withLock { s in readAll(s.buffer!) }
        #expect(held == [1, 2, 3])
    }

    /// A seek or a close drops the held bytes anyway: the source gets an empty buffer, not a
    /// copy, and still never the lent one.
    @Test func aTransferCancelledToDropTheBytesLeavesAnEmptyBuffer() throws {
        let url = URL(string: "http://127.0.0.1:9/blob")!
        let source = HTTPDataSource(url: url)
        let request = HTTPRangeRequest(url: url, first: 0, extraFields: [:], credentialFields: [])
        try source.state.withLock { s in
            s.buffer = ReadAheadBuffer(capacity: 16)
            _ = write([1, 2, 3], to: s.buffer!)
            s.transfer = HTTPDataSource.ActiveTransfer(
                id: 7, object: IdleTransfer(), request: request, usesURLSession: false, redirects: 0)
            let lent = try #require(s.buffer!.lend(limit: 16))
            var effects = HTTPDataSource.Effects()
            source.cancelTransfer(&s, &effects, keepingBuffered: false)
            #expect(s.buffer !== lent.buffer)
            #expect(s.buffer?.count == 0)
            #expect(s.buffer?.capacity == 16)
            #expect(effects.cancel.count == 1)
        }
    }

    private final class IdleTransfer: HTTPTransfer {
        func start() {}
        func cancel() {}
    }
}
