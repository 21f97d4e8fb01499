import Dispatch
import Foundation
internal import SystemCalls

// One bridge each way between blocking and `async` code: blocking work awaited
// off Swift's cooperative pool (``withBlockingWork(at:onCancel:_:)``), and a thread blocked
// until a value arrives (``Handoff``) or `async` work ends (``waitForAsync(_:)``). Why the pool
// must never block: README, "Events and threads".

/// Where blocking work runs, off Swift's cooperative pool.
package enum BlockingPlace: Sendable {
    /// A thread of its own with this name (``WorkerThreads``: reused, never shared): for work
    /// that may block long (a network request), so that calls side by side never wait on each
    /// other.
    case newThread(String)
    /// This serial queue: for work that must run in order with the queue's other work.
    case queue(DispatchQueue)
}

/// Runs `work` at `place`, never on the calling task's thread, and returns what it returned.
/// `onCancel` runs (on any thread, possibly before `work` starts) when the calling task is
/// cancelled, and must make `work` return soon: `work` runs to its end either way.
package func withBlockingWork<T: Sendable>(
    at place: BlockingPlace, onCancel: @escaping @Sendable () -> Void, _ work: @escaping @Sendable () -> T
) async -> T {
    await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let run: @Sendable () -> Void = { continuation.resume(returning: work()) }
            switch place {
            case .newThread(let name):
                WorkerThreads.shared.start(name, run)
            case .queue(let queue):
                queue.async(execute: run)
            }
        }
    } onCancel: {
        onCancel()
    }
}

/// A value handed from one thread to others that wait for it: set once (later sets are
/// ignored), waited for by any number of threads, none of which may be one of Swift's
/// cooperative threads.
package final class Handoff<Value: Sendable>: Sendable {
    private let value = LockedValue<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    /// An empty handoff.
    package init() {}

    /// Hands `newValue` over, unless a value was handed over already.
    package func set(_ newValue: Value) {
        let first = value.withLock { value -> Bool in
            guard value == nil else { return false }
            value = newValue
            return true
        }
        if first { ready.signal() }
    }

    /// Blocks until the value is set, and returns it.
    package func wait() -> Value {
        wait(until: .distantFuture)!
    }

    /// Blocks until the value is set, and returns it, or until `deadline`: `nil` then.
    package func wait(until deadline: DispatchTime) -> Value? {
        guard ready.wait(timeout: deadline) == .success else { return nil }
        // Passed on, for the next waiter.
        defer { ready.signal() }
        return value.withLock { $0! }
    }
}

/// Runs `work` on a new task and blocks the calling thread until it ends. The caller must not
/// be one of Swift's cooperative threads (its wait would hold one the task may need). With an
/// `executor` (``PullExecutor``), the task prefers it to the cooperative pool: for work a
/// library thread waits for while code elsewhere may hold every thread of the pool.
package func waitForAsync<T: Sendable, Failure: Error>(
    on executor: (any TaskExecutor)? = nil,
    _ work: @escaping @Sendable () async throws(Failure) -> T
) -> Result<T, Failure> {
    waitForAsync(on: executor, until: .distantFuture, unless: { false }, work)!
}

/// ``waitForAsync(on:_:)`` for work that must not hold the caller without bound (a peer's
/// answer): gives up at `deadline`, or as soon as `stopped` says so (it is asked every 50 ms),
/// cancelling the task, and returns `nil` then.
package func waitForAsync<T: Sendable, Failure: Error>(
    on executor: (any TaskExecutor)? = nil, until deadline: DispatchTime, unless stopped: () -> Bool,
    _ work: @escaping @Sendable () async throws(Failure) -> T
) -> Result<T, Failure>? {
    let outcome = Handoff<Result<T, Failure>>()
    let task = Task.detached(executorPreference: executor) {
        do throws(Failure) {
            outcome.set(.success(try await work()))
        } catch {
            outcome.set(.failure(error))
        }
    }
    while true {
        let slice = min(deadline, .now() + 0.05)
        if let result = outcome.wait(until: slice) { return result }
        if stopped() || DispatchTime.now() >= deadline {
            task.cancel()
            return nil
        }
    }
}
