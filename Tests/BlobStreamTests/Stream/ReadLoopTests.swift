@testable import BlobStream
import Foundation
import Testing

/// `InputStream.readLoop`, the one read-and-hash loop under the checksum calculator and the
/// upload readers: every way it stops, on a scripted stream and on Foundation's own.
@Suite struct ReadLoopTests {
    /// Answers reads from a script; a status and availability of its own.
    final class ScriptedStream: InputStream, TypedErrorStream {
        enum Answer { case bytes(Int), zero, failure(BlobStreamError) }
        var answers: [Answer]
        var status = Stream.Status.open
        var available = true
        var reads = 0
        private(set) var blobError: BlobStreamError?

        init(_ answers: [Answer]) {
            self.answers = answers
            super.init(data: Data())
        }

        override var streamStatus: Stream.Status { status }
        override var hasBytesAvailable: Bool { available }
        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
            reads += 1
            switch answers.isEmpty ? .zero : answers.removeFirst() {
            case .bytes(let count):
                let count = min(count, len)
                buffer.update(repeating: UInt8(truncatingIfNeeded: reads), count: count)
                return count
            case .zero:
                return 0
            case .failure(let error):
                blobError = error
                status = .error
                return -1
            }
        }
    }

    /// Runs the loop over `stream` into two rooms of `roomSize` taken in turn, at most `rooms`
    /// times; returns the stop and the counts `consume` saw.
    private func run(
        _ stream: InputStream, roomSize: Int = 8, rooms: Int = .max, waitsForEvents: Bool = false, stopped: () -> Bool = { false }
    ) -> (ReadLoopStop, [Int]) {
        let buffers = (0..<2).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: roomSize, alignment: 8) }
        defer { buffers.forEach { $0.deallocate() } }
        var counts: [Int] = []
        let stop = stream.readLoop(into: buffers[0], waitsForEvents: waitsForEvents, stopped: stopped) { bytes in
            #expect(bytes.baseAddress == UnsafeRawPointer(buffers[counts.count % 2].baseAddress))
            counts.append(bytes.count)
            return counts.count < rooms ? buffers[counts.count % 2] : nil
        }
        return (stop, counts)
    }

    @Test func consumeGetsEveryReadInTheRoomItGaveAndEndsTheLoopWithNil() {
        let stream = ScriptedStream([.bytes(8), .bytes(3), .bytes(8)])
        let (stop, counts) = run(stream, rooms: 2)
        #expect(stop == .filled)
        #expect(counts == [8, 3])
        #expect(stream.reads == 2)
    }

    @Test func foundationsDataStreamEndsAtItsEndStatus() {
        let stream = InputStream(data: Data(repeating: 1, count: 20))
        stream.open()
        let (stop, counts) = run(stream)
        #expect(stop == .end)
        #expect(counts == [8, 8, 4])
        #expect(stream.streamStatus == .atEnd)
    }

    @Test func aReadOfZeroIsAnEndTheCallerJudgesByTheStatus() {
        let stream = ScriptedStream([.bytes(5), .zero, .bytes(5)])
        let (stop, counts) = run(stream)
        #expect(stop == .end)
        #expect(counts == [5])
        #expect(stream.streamStatus == .open)
    }

    @Test func aFailedReadIsAFailureUnlessStoppedSaysSo() {
        let failing = ScriptedStream([.bytes(2), .failure(.closed)])
        #expect(run(failing).0 == .failed)
        #expect(failing.typedError == .closed)

        // A stream closed from another thread to interrupt a read fails that read: the
        // interruption is the stop, not the failure it caused.
        let interrupted = ScriptedStream([.bytes(2), .failure(.closed)])
        var asked = 0
        let (stop, counts) = run(interrupted, stopped: { asked += 1; return asked > 2 })
        #expect(stop == .stopped)
        #expect(counts == [2])
    }

    @Test func stoppedIsAskedBeforeEveryRead() {
        let stream = ScriptedStream([.bytes(8), .bytes(8), .bytes(8)])
        var asked = 0
        let (stop, counts) = run(stream, stopped: { asked += 1; return asked > 2 })
        #expect(stop == .stopped)
        #expect(counts == [8, 8])
        #expect(stream.reads == 2)
    }

    @Test func aClosedOrFailedStreamFailsWithoutARead() {
        let stream = ScriptedStream([.bytes(8)])
        stream.status = .closed
        stream.available = false
        #expect(run(stream).0 == .failed)
        #expect(stream.reads == 0)
        stream.status = .error
        #expect(run(stream).0 == .failed)
        #expect(stream.reads == 0)

        stream.status = .atEnd
        #expect(run(stream).0 == .end)
        #expect(stream.reads == 0)
    }

    /// A plain subclass that keeps no status stays `.notOpen` and says "no bytes" at its end:
    /// it is read, and its end is the read of 0 (an upload then names the offset where it ended
    /// short, not a failed stream).
    @Test func aStreamThatKeepsNoStatusIsReadToItsReadOfZero() {
        let stream = ScriptedStream([.bytes(8), .bytes(2), .zero])
        stream.status = .notOpen
        stream.available = false
        let (stop, counts) = run(stream)
        #expect(stop == .end)
        #expect(counts == [8, 2])
        #expect(stream.reads == 3)
    }

    @Test func noBytesNowWaitsForTheNextEventOnlyWhenEventsDriveTheLoop() {
        let idle = ScriptedStream([.bytes(8)])
        idle.available = false
        #expect(run(idle, waitsForEvents: true).0 == .waiting)
        #expect(idle.reads == 0)
        // A blocking loop reads on while the stream is open: Foundation's data streams say
        // "no bytes" at an empty end until a read moves them to `.atEnd`.
        #expect(run(idle).1 == [8])

        let blocking = ScriptedStream([.bytes(4), .failure(.wouldBlock(offset: 4))])
        #expect(run(blocking, waitsForEvents: true) == (.waiting, [4]))
        let blockingWithoutEvents = ScriptedStream([.bytes(4), .failure(.wouldBlock(offset: 4))])
        #expect(run(blockingWithoutEvents) == (.failed, [4]))
    }
}
