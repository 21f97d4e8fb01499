import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// How a ``BlobChunks`` iteration ends: cancellation closes the source at once, a dropped
/// iterator closes it, a stale source is reopened, and a changed one throws.
@Suite struct BlobChunksLifecycleTests {
    @Test func cancellingAWaitingIterationClosesTheSourceAndThrowsCancellationError() async throws {
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: 1_000_000, seed: 11))
        let parked = LockedValue<(@Sendable () -> Void)?>(nil)
        // The third read finds nothing and keeps its wake-up: the iteration waits for bytes.
        source.onRead { offset, whenReadable in
            guard offset >= 200_000 else { return .serve }
            parked.withLock { $0 = whenReadable }
            return .answer(.wouldBlock)
        }
        let received = LockedValue(0)
        let task = Task {
            for try await chunk in BlobChunks(dataSource: source, chunkSize: 100_000) {
                received.withLock { $0 += chunk.count }
            }
        }
        #expect(await eventuallyAsync { received.withLock { $0 } == 200_000 && parked.withLock { $0 } != nil }, "received \(received.withLock { $0 }), calls \(source.calls)")
        task.cancel()
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        // The source was closed, and nothing read it after that. The cancellation closes the
        // stream at once; the stream closes its source then, or when the read ahead that found
        // nothing returns on the work queue.
        _ = await eventuallyAsync { source.calls.contains(.close) }
        let calls = source.calls
        let closed = calls.lastIndex(of: .close)
        #expect(closed != nil, "the source was never closed: \(calls)")
        if let closed {
            #expect(!calls[closed...].contains { if case .read = $0 { return true } else { return false } }, "\(calls)")
        }
        #expect(source.violations.isEmpty, "\(source.violations)")
        // A late wake-up from the source changes nothing.
        parked.withLock { $0 }?()
        #expect(source.calls == calls)
    }

    @Test func cancellingDuringTheLoopBodyClosesTheFile() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 8 << 20, seed: 12)
        let task = Task {
            var chunks = 0
            for try await _ in try BlobChunks(url: URL(fileURLWithPath: path), chunkSize: 256 * 1024) {
                chunks += 1
                #expect(openDescriptors(of: path) == 1)
                if chunks == 2 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return chunks
        }
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(await eventuallyAsync { openDescriptors(of: path) == 0 }, "the file is still open after the cancelled iteration")
    }

    @Test func aDroppedIteratorClosesTheFile() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 4 << 20, seed: 13)
        for try await chunk in try BlobChunks(url: URL(fileURLWithPath: path), chunkSize: 64 * 1024) {
            #expect(chunk.offset == 0)
            break
        }
        #expect(await eventuallyAsync { openDescriptors(of: path) == 0 }, "the file is still open after the loop ended early")
    }

    @Test(arguments: [1, 2, 3])
    func aStaleSourceIsReopenedAndReadOn(seed: UInt64) async throws {
        var generator = SeededGenerator(seed: seed)
        let bytes = TempFiles.pseudoRandomBytes(count: 2_000_000, seed: seed)
        let stale = Set((0..<15).map { _ in Int64.random(in: 0..<Int64(bytes.count), using: &generator) })
        let source = ScriptedDataSource(bytes: bytes, staleOffsets: stale)
        let read = try await collect(BlobChunks(dataSource: source, chunkSize: 100_000), from: 0, chunkSize: 100_000)
        #expect(read == bytes)
        #expect(source.invalidations == stale.count)
        #expect(source.openCount == stale.count + 1)
        // The end closes the stream; its source closes then, or, should a reopen's `open` not
        // have returned yet (its completion came first and the reading went on), when it returns.
        #expect(await eventuallyAsync { source.closeCount == source.openCount }, "opened \(source.openCount) times, closed \(source.closeCount)")
    }

    @Test func aChangedSourceThrowsInsteadOfMixingVersions() async throws {
        let source = ScriptedDataSource(bytes: Array(repeating: 1, count: 1_000_000))
        var received: [UInt8] = []
        await #expect {
            for try await chunk in BlobChunks(dataSource: source, chunkSize: 100_000) {
                received.append(contentsOf: chunk)
                if received.count == 100_000 { source.replace(with: Array(repeating: 2, count: 1_000_000)) }
            }
        } throws: { error in
            guard case .sourceChanged(resource: "scripted", offset: _, reason: let reason)? = error as? BlobStreamError else {
                return false
            }
            return reason.contains("v1") && reason.contains("v2")
        }
        #expect(received.allSatisfy { $0 == 1 })
        #expect(await eventuallyAsync { source.closeCount >= source.openCount })
    }

    @Test func aFailingSourceThrowsItsError() async throws {
        let source = ProbeDataSource(bytes: Array(repeating: 7, count: 300_000), name: "failing")
        source.onRead { offset, _ in
            offset >= 100_000 ? .answer(.failed(.system(resource: "failing", operation: "pread", offset: offset, errno: EIO))) : .serve
        }
        var received = 0
        await #expect(throws: BlobStreamError.system(resource: "failing", operation: "pread", offset: 100_000, errno: EIO)) {
            for try await chunk in BlobChunks(dataSource: source, chunkSize: 100_000) { received += chunk.count }
        }
        #expect(received == 100_000)
    }
}
