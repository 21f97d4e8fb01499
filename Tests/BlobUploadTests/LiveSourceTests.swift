import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// The adapter from an `AsyncSequence` of byte chunks to an upload source, read through the
/// stream an upload reads it with: every byte in order, pulled only on demand, read once.
///
/// The stream's reads block until the producer's task has pulled: they run on a dispatch
/// queue, as the uploads run them, never on Swift's cooperative pool that the task needs.
@Suite struct LiveSourceTests {
    /// `work`, run on a dispatch queue.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Reads the one stream of `source` to its end with reads of `readSize`, off the pool.
    static func readAll(_ source: UploadSource, readSize: Int = 10_000) async throws -> Data {
        try await offPool { try readAllBlocking(source, readSize: readSize) }
    }

    private static func readAllBlocking(_ source: UploadSource, readSize: Int) throws -> Data {
        let stream = try source.stream(at: 0, pinnedTo: VersionPin()).stream
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: readSize)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count < 0 { throw (stream as? BlobInputStream)?.blobError ?? BlobStreamError.closed }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
        }
    }

    /// Reads smaller than the stream's block once made it want two elements at a time (a
    /// stale wake-up asked again), and the second overwrote the first: bytes were lost.
    @Test(arguments: [7, 10_000, 70_000, 1 << 20])
    func dataChunksArriveByteIdentical(readSize: Int) async throws {
        let size = 5_000_000
        let chunks = GeneratedBytes(size: size, seed: 61)
        let read = try await Self.readAll(.live(name: "camera", chunks), readSize: readSize)
        #expect(read == Data(TempFiles.pseudoRandomBytes(count: size, seed: 61)))
    }

    @Test func byteArraysAndEmptyElementsToo() async throws {
        let parts: [[UInt8]] = [[1, 2, 3], [], [4], [], [], Array(5...200)]
        let stream = AsyncStream<[UInt8]> { continuation in
            for part in parts { continuation.yield(part) }
            continuation.finish()
        }
        #expect(try await Self.readAll(.live(name: "bytes", stream), readSize: 7) == Data(parts.joined()))
    }

    @Test func slicesOfAnyByteCollection() async throws {
        let stream = AsyncStream<ArraySlice<UInt8>> { continuation in
            continuation.yield([9, 8, 7, 6, 5][1...3])
            continuation.finish()
        }
        #expect(try await Self.readAll(.live(name: "slices", stream)) == Data([8, 7, 6]))
    }

    @Test func nothingIsPulledBeforeAReadAndOnlyWhatTheReaderNeeds() async throws {
        var chunks = GeneratedBytes(size: 1_000_000, seed: 62)
        chunks.sizes = [1000]
        let log = chunks.log
        let source = UploadSource.live(name: "paced", chunks)
        let counts = try await Self.offPool { () throws -> [Int] in
            let stream = try source.stream(at: 0, pinnedTo: VersionPin()).stream
            stream.open()
            defer { stream.close() }
            let beforeReading = log.pulls
            var buffer = [UInt8](repeating: 0, count: 1000)
            var reads: [Int] = []
            for _ in 0..<5 { reads.append(stream.read(&buffer, maxLength: buffer.count)) }
            return [beforeReading, log.pulls] + reads
        }
        #expect(counts[0] == 0)
        // Five elements read; at most the one asked for by the read that used up the fifth.
        #expect(counts[1] <= 6)
        #expect(Array(counts[2...]) == [1000, 1000, 1000, 1000, 1000])
    }

    @Test func aThrowingProducerFailsTheReadNamingTheOffset() async throws {
        var chunks = GeneratedBytes(size: 1_000_000, seed: 63)
        chunks.failAt = 300_000
        await #expect {
            _ = try await Self.readAll(.live(name: "encoder", chunks))
        } throws: { error in
            guard case .sourceFailed("encoder", let reason)? = error as? BlobStreamError else { return false }
            return reason.contains("after 300000 bytes") && reason.contains("the encoder broke")
        }
    }

    @Test func theDataIsReadOnce() async throws {
        let source = UploadSource.live(name: "once", GeneratedBytes(size: 10, seed: 64))
        _ = try await Self.readAll(source)
        #expect(throws: BlobUploadError.notReplayable(source: "once", offset: 0, available: 10)) {
            _ = try source.stream(at: 0, pinnedTo: VersionPin())
        }
        let fresh = UploadSource.live(name: "fresh", GeneratedBytes(size: 10, seed: 64))
        #expect(throws: BlobUploadError.notReplayable(source: "fresh", offset: 5, available: 0)) {
            _ = try fresh.stream(at: 5, pinnedTo: VersionPin())
        }
    }

    /// A streamed PUT's body read holds URLSession's one work queue while it waits for the
    /// producer, and URLSession calls made from Swift's cooperative pool wait for that queue:
    /// were the pulling task to need the pool, a pool full of such calls would never let it
    /// run. Here every thread of the pool is held until the read has its bytes.
    @Test func pullingNeedsNoThreadOfTheCooperativePool() async throws {
        let source = UploadSource.live(name: "pool", GeneratedBytes(size: 100_000, seed: 66))
        let width = ProcessInfo.processInfo.activeProcessorCount
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blockers = (0..<width).map { _ in
            Task.detached {
                started.signal()
                // Bounded, so that a failure is a failed test, not a hung run.
                return release.wait(timeout: .now() + 20) == .success
            }
        }
        let read = try await Self.offPool { () throws -> Data in
            for _ in 0..<width { _ = started.wait(timeout: .now() + 20) }
            defer { for _ in 0..<width { release.signal() } }
            return try Self.readAllBlocking(source, readSize: 10_000)
        }
        #expect(read == Data(TempFiles.pseudoRandomBytes(count: 100_000, seed: 66)))
        for blocker in blockers {
            #expect(await blocker.value, "the read waited for the cooperative pool")
        }
    }

    @Test func closingTheStreamCancelsTheProducer() async throws {
        var chunks = GeneratedBytes(size: 1_000_000, seed: 65)
        chunks.stallAt = 2000
        chunks.sizes = [1000]
        let log = chunks.log
        let source = UploadSource.live(name: "stalled", chunks)
        let stream = StreamBox(try source.stream(at: 0, pinnedTo: VersionPin()).stream)
        // The third read waits for the stalled producer, until the stream is closed.
        let reads = Task {
            try await Self.offPool { () -> [Int] in
                stream.stream.open()
                var buffer = [UInt8](repeating: 0, count: 1000)
                return (0..<3).map { _ in stream.stream.read(&buffer, maxLength: 1000) }
            }
        }
        #expect(await log.wait { $0.pulls >= 3 })
        stream.stream.close()
        #expect(try await reads.value == [1000, 1000, -1])
        #expect(await log.wait { $0.cancelled && $0.released })
        #expect(log.pullsAfterCancel == 0)
    }
}

/// A stream handed to another thread; `close()` is the one call made from two threads, and a
/// ``BlobInputStream`` allows that.
final class StreamBox: @unchecked Sendable {
    let stream: InputStream
    init(_ stream: InputStream) { self.stream = stream }
}
