import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The first async `read(into:)` of an asynchronous stream, which opens it, racing the
/// source's open completion on another thread. `readAsynchronously` answers -1 with
/// `.notOpen` while the stream is `.opening`; `readWhenAvailable` then looks at the status
/// again, and when the open completed in between it had thrown that `.notOpen`.
@Suite(.serialized) struct AsyncOpenRaceTests {
    static let rounds = 2000

    @Test func firstAsyncReadRacingTheOpenCompletionNeverFailsWithNotOpen() async {
        var failures: [String] = []
        for round in 0..<Self.rounds {
            let source = JitterSource(length: 8192)
            source.wouldBlockChance = 0
            source.holdsOpens = true
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            let spins = Int.random(in: 0...4000)
            Thread.detachNewThread {
                while !source.openIsHeld { sched_yield() }
                var x = 0
                for i in 0..<spins { x &+= i }
                if x == -1 { print(x) }
                source.releaseOpen()
            }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { buffer.deallocate() }
            do {
                let count = try await stream.read(into: buffer)
                if count <= 0 { failures.append("round \(round): read \(count)") }
            } catch {
                failures.append("round \(round): \(error)")
            }
            stream.close()
            if failures.count >= 3 { break }
        }
        #expect(failures.isEmpty, "\(failures)")
    }
}
