import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// ``BlobChunks`` reads on demand: one chunk ahead of the consumer at most, and without a
/// thread per sequence.
@Suite struct BlobChunksDemandTests {
    @Test func aConsumerThatStopsAskingLeavesTheSourceAtMostOneChunkAhead() async throws {
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: 1_000_000, seed: 51))
        var iterator = BlobChunks(dataSource: source, chunkSize: 100_000).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.offset == 0)
        // However long the consumer works on the first chunk, only the second is read meanwhile.
        #expect(await eventuallyAsync { source.reads.count == 2 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(source.reads == [.read(offset: 0, capacity: 100_000), .read(offset: 100_000, capacity: 100_000)])
        let second = try await iterator.next()
        #expect(second?.offset == 100_000)
        #expect(await eventuallyAsync { source.reads.count == 3 })
    }

    /// An immediate source (a file) keeps reading the next chunk while the consumer works on
    /// this one, even after a stretch in which the consumer came back at once and read its
    /// chunks itself (``ChunkRefillDispatch``).
    @Test func aConsumerThatSlowsDownGetsTheNextChunkReadWhileItWorks() async throws {
        let size = 100 * 10_000
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: size, seed: 53), readsImmediately: true)
        var iterator = BlobChunks(dataSource: source, chunkSize: 10_000).makeAsyncIterator()
        var offset: Int64 = 0
        // Fast: the consumer asks again at once, for 40 chunks.
        for _ in 0..<40 {
            let chunk = try #require(try await iterator.next())
            #expect(chunk.offset == offset)
            offset += Int64(chunk.count)
        }
        // Slow: within at most eight chunks, each next one is read while the consumer holds
        // the one before, without asking for it.
        var readAhead: [Bool] = []
        for _ in 0..<20 {
            let chunk = try #require(try await iterator.next())
            #expect(chunk.offset == offset)
            offset += Int64(chunk.count)
            let next = Int64(chunk.offset) + 10_000
            // The consumer holds the chunk until the read ahead came, up to 2 s: under a full
            // suite's load the work queue took longer than 0.5 s to start it once.
            readAhead.append(await eventuallyAsync(timeout: 2) { source.reads.contains(.read(offset: next, capacity: 10_000)) })
        }
        #expect(readAhead.suffix(12).allSatisfy { $0 }, "\(readAhead)")
    }

    @Test func twoHundredFiftySixSequencesAtOnceShareAFewThreads() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        let size = 2 << 20
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 52)
        let threads = ThreadRecord()
        let totals = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<256 {
                group.addTask {
                    let source = ThreadRecordingSource(base: FileDataSource(path: path), record: threads)
                    var total = 0
                    for try await chunk in BlobChunks(dataSource: source, chunkSize: 256 * 1024) { total += chunk.count }
                    return total
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(totals.count == 256 && totals.allSatisfy { $0 == size })
        // Sources are read by the tasks themselves or the library's few shared threads. The
        // tasks' threads are dispatch's global pool, which on Linux adds a thread whenever its
        // threads are blocked (by other tests, in a full run): a bound well above the pool, and
        // far below the 256 that a thread per sequence would take.
        #expect(threads.count <= 64, "the sources were read on \(threads.count) threads")
    }
}
