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
    /// A deadlock never ends; this only has to outlast a loaded machine's slowest round (the
    /// whole suite starting at once can keep a new task waiting for a thread for seconds).
    static let patience: Double = 60

    /// Runs `read` (reading a fresh source that often answers `wouldBlock`) in a task, cancels
    /// the task from another thread at a random moment, and expects both to return, `rounds` times.
    static func cancelsWithoutDeadlock(_ what: String, _ read: @escaping @Sendable (JitterSource) async -> Void) async {
        for round in 0..<rounds {
            let source = JitterSource(length: 256 * 1024)
            source.wouldBlockChance = 0.7
            source.maxWakeDelay = 0.0002
            let (started, finished) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let task = Task {
                started.signal()
                defer { finished.signal() }
                await read(source)
            }
            let box = Unchecked(task)
            let cancelled = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: Double.random(in: 0...0.001))
                box.value.cancel()
                cancelled.signal()
            }
            // A task the loaded pool has not started yet cannot deadlock: the patience counts from its start.
            let ok = await offThePool {
                started.wait(timeout: .now() + 10 * patience) == .success
                    && cancelled.wait(timeout: .now() + patience) == .success && finished.wait(timeout: .now() + patience) == .success
            }
            if !ok {
                Issue.record("round \(round): Task.cancel() or the cancelled \(what) did not return within \(patience) s (deadlock)")
                return
            }
        }
    }

    @Test func cancellingAWaitingBlobChunksNeverDeadlocks() async {
        await Self.cancelsWithoutDeadlock("BlobChunks") { source in
            do {
                for try await _ in BlobChunks(dataSource: source, chunkSize: 4096) {}
            } catch {}
        }
    }

    @Test func cancellingAWaitingAsyncReadNeverDeadlocks() async {
        await Self.cancelsWithoutDeadlock("read") { source in
            let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
            stream.blockSize = 4096
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { buffer.deallocate() }
            while (try? await stream.read(into: buffer)).map({ $0 > 0 }) == true {}
        }
    }
}
