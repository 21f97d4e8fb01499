import Foundation

/// Wakes one task that waits for a stream to change, without a thread blocked meanwhile.
///
/// The waiter calls ``reset()``, then looks at the stream, then ``wait(isolation:onCancel:)``s
/// if it found nothing to do: a ``signal()`` that came after the reset (from the stream's
/// observer, on any thread) makes the wait return at once, so no change is lost between the
/// look and the wait.
final class ChangeSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var signalled = false
    private var waiter: CheckedContinuation<Void, Never>?

    /// Forgets earlier signals; call before looking at the stream.
    func reset() {
        lock.withLock { signalled = false }
    }

    /// Records a change and resumes the waiting task, if any. Cheap and lock-free towards the
    /// stream, so it may run with the stream's lock held; resuming takes the task's status
    /// lock, which is why a cancellation handler must never take the stream's lock (see
    /// ``wait(isolation:onCancel:)``).
    func signal() {
        let resumed = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            signalled = true
            defer { waiter = nil }
            return waiter
        }
        resumed?.resume()
    }

    /// Returns at the first signal since the last ``reset()``, or when the task is cancelled,
    /// after calling `onCancel` (which has the stream closed, so its source stops at once
    /// rather than when the task next runs). `onCancel` runs with the task's status lock held:
    /// it must not take the stream's lock itself, or it deadlocks against a ``signal()`` made
    /// under that lock.
    func wait(isolation: isolated (any Actor)? = #isolation, onCancel: @escaping @Sendable () -> Void) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Void, Never>) in
                let now = lock.withLock { () -> Bool in
                    if signalled { return true }
                    waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            onCancel()
            signal()
        }
    }
}
