import Foundation

/// Stops, from any thread, what a blocking operation waits in: a stream that may be closed
/// from any thread (an ``InterruptibleStream``; its `close()` makes a blocked read return at
/// once), or a ``ChecksumCalculator`` (cancelled). Other streams promise no such thing, so they
/// are left alone and their readers check ``isInterrupted`` between reads. Once interrupted,
/// whatever is watched next is stopped at once, so an interruption never falls into the gap
/// between two targets.
package final class Interrupter: @unchecked Sendable {
    private let lock = NSLock()
    private var interrupted = false
    /// Stops the current target; only ever called, which the target allows from any thread.
    private var stop: (() -> Void)?

    package init() {}

    /// An interrupter watching `stream`.
    package convenience init(watching stream: InputStream?) {
        self.init()
        watch(stream)
    }

    /// Whether ``interrupt()`` was called.
    package var isInterrupted: Bool { lock.withLock { interrupted } }

    /// Watches `stream` from now on (`nil`: nothing), if it may be closed from any thread.
    package func watch(_ stream: InputStream?) {
        guard let stream, stream.canCloseFromAnyThread else { return replace(with: nil) }
        replace(with: { stream.close() })
    }

    /// Watches `calculator` from now on (`nil`: nothing).
    package func watch(calculator: ChecksumCalculator?) {
        replace(with: calculator.map { calculator in { calculator.cancel() } })
    }

    /// Stops the target, and every later one. Idempotent.
    package func interrupt() {
        let target = lock.withLock { () -> (() -> Void)? in
            interrupted = true
            return stop
        }
        target?()
    }

    private func replace(with target: (() -> Void)?) {
        let now = lock.withLock { () -> Bool in
            stop = target
            return interrupted
        }
        if now { target?() }
    }
}
