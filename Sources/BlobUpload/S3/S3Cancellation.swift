import BlobStream
import Foundation
internal import HTTP1
internal import SystemCalls

/// The cancellation state of one S3 operation, shared by its worker threads: cancelling
/// interrupts every connection in use (``requests``)
/// and every stream being read that can be closed from any thread, and wakes every retry wait,
/// so the workers stop at once.
final class S3Cancellation: Sendable {
    private struct State {
        var cancelled = false
        var streams: [ObjectIdentifier: Interrupter] = [:]
    }

    /// The requests' cancellation: the connections in use.
    let requests = HTTP1Cancellation()

    private let state = LockedValue(State())
    private let condition = NSCondition()

    /// Whether ``cancel()`` was called.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels: interrupts the connections and streams in use, wakes waits. Idempotent.
    func cancel() {
        let streams = state.withLock { state in
            state.cancelled = true
            return Array(state.streams.values)
        }
        requests.cancel()
        streams.forEach { $0.interrupt() }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Records a stream being read; closed on cancel only if it may be closed from any thread.
    func watch(_ stream: InputStream) {
        guard stream.canCloseFromAnyThread else { return }
        let interrupter = Interrupter(watching: stream)
        let cancelled = state.withLock { state in
            state.streams[ObjectIdentifier(stream)] = interrupter
            return state.cancelled
        }
        if cancelled { interrupter.interrupt() }
    }

    /// Forgets `stream`.
    func unwatch(_ stream: InputStream) {
        _ = state.withLock { $0.streams.removeValue(forKey: ObjectIdentifier(stream)) }
    }

    /// Waits `seconds`, or less when cancelled; returns `false` when cancelled.
    func sleep(_ seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !isCancelled, Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        return !isCancelled
    }
}
