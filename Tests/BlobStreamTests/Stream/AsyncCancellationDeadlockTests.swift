import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Cancelling a task whose async read waits (``BlobChunks``, `read(into:isolation:)`) while the
/// stream posts an event. The cancellation handler runs under the task's status lock, and a
/// poster holds the stream's lock while it resumes the task: a handler that closed the stream
/// there (taking the stream's lock) deadlocked within a few hundred rounds.
@Suite(.serialized) struct AsyncCancellationDeadlockTests {
    static let rounds = 1000

    @Test func cancellingAWaitingBlobChunksNeverDeadlocks() async {
        for round in 0..<Self.rounds {
            let source = JitterSource(length: 256 * 1024)
            source.wouldBlockChance = 0.7
            source.maxWakeDelay = 0.0002
            let finished = DispatchSemaphore(value: 0)
            let task = Task {
                defer { finished.signal() }
                do {
                    for try await _ in BlobChunks(dataSource: source, chunkSize: 4096) {}
                } catch {}
            }
            let box = Unchecked(task)
            let cancelled = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.001))
                box.value.cancel()
                cancelled.signal()
            }
            let ok = await offThePool {
                cancelled.wait(timeout: .now() + 10) == .success && finished.wait(timeout: .now() + 10) == .success
            }
            if !ok {
                Issue.record("round \(round): Task.cancel() or the cancelled BlobChunks did not return within 10 s (deadlock)")
                return
            }
        }
    }

    @Test func cancellingAWaitingAsyncReadNeverDeadlocks() async {
        for round in 0..<Self.rounds {
            let source = JitterSource(length: 256 * 1024)
            source.wouldBlockChance = 0.7
            source.maxWakeDelay = 0.0002
            let stream = Unchecked(BlobInputStream(dataSource: source, mode: .asynchronous))
            stream.value.blockSize = 4096
            let finished = DispatchSemaphore(value: 0)
            let task = Task {
                defer { finished.signal() }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
                defer { buffer.deallocate() }
                while (try? await stream.value.read(into: buffer)).map({ $0 > 0 }) == true {}
            }
            let box = Unchecked(task)
            let cancelled = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.001))
                box.value.cancel()
                cancelled.signal()
            }
            let ok = await offThePool {
                cancelled.wait(timeout: .now() + 10) == .success && finished.wait(timeout: .now() + 10) == .success
            }
            if !ok {
                Issue.record("round \(round): Task.cancel() or the cancelled read did not return within 10 s (deadlock)")
                return
            }
        }
    }
}
