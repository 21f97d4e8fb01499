import Foundation
import Synchronization

/// Delivers a stream's events to its delegate on every run loop (and mode) the stream is
/// scheduled in and on its delegate queue.
///
/// Linux Foundation's own streams never deliver events, so this is ours: each target keeps a FIFO
/// of pending events and at most one scheduled drain. A drain on a run loop is a zero-interval
/// `Timer` added to that run loop, because adding a timer from another thread wakes a sleeping
/// run loop and `RunLoop.perform` does not; a drain on a queue is an `async` block. Per target,
/// events arrive in the order they were posted and never concurrently. A `hasBytesAvailable`
/// posted while one is already waiting is merged into it, so no state change is lost or repeated.
final class StreamEventDispatcher: @unchecked Sendable {
    /// How long one drain may deliver events before it yields the thread to other work, and
    /// how often it looks at the clock. Each yield costs the next drain a run-loop timer, about
    /// 20 µs here: a drain that stopped after a fixed 16 events (one timer per megabyte read)
    /// halved the throughput of delegates on a run loop, and a 1 ms budget still cost 2% of it
    /// (measured with blob-bench). 4 ms cost 0.5% and keeps other work on the thread waiting
    /// less than a quarter of a 60 Hz frame.
    private static let drainBudgetNanoseconds: UInt64 = 4_000_000
    private static let eventsBetweenClockChecks = 16

    private let lock = NSLock()
    /// How many targets there are, readable without the lock: the common case of a stream
    /// that nobody listens to posts after every read and must pay nothing for it.
    private let targetCount = Atomic<Int>(0)
    private var runLoopTargets: [RunLoopTarget] = []
    private var queueTarget: QueueTarget?
    /// Whether an observer is set, readable without the lock, like `targetCount`.
    private let observed = Atomic<Bool>(false)
    private var observer: (@Sendable () -> Void)?
    /// For blob-bench: called on the target's thread just before a `hasBytesAvailable` is
    /// delivered, with the nanoseconds since it was first posted. Set before the stream opens.
    var latencyProbe: (@Sendable (UInt64) -> Void)?
    /// Called for each event, on the target's thread; decides whether it still reaches the
    /// delegate. Set once, by the stream's initialiser, before any event can be posted.
    var deliver: @Sendable (Stream.Event) -> Void = { _ in }

    /// Publishes the number of targets. Lock held.
    private func countTargets() {
        targetCount.store(runLoopTargets.count + (queueTarget == nil ? 0 : 1), ordering: .releasing)
    }

    /// Sets the one observer (`nil`: none), which hears of every event and of `close()` at once,
    /// on the thread that posts it, possibly with the stream's lock held: it must only wake a
    /// waiter (``BlobChunks``, the async `read`), never call the stream.
    func observe(_ observer: (@Sendable () -> Void)?) {
        lock.withLock {
            self.observer = observer
            observed.store(observer != nil, ordering: .releasing)
        }
    }

    /// Tells the observer, if any, that the stream's state changed.
    func notifyObserver() {
        guard observed.load(ordering: .acquiring) else { return }
        lock.withLock { observer }?()
    }

    /// Queues `event` for every target.
    func post(_ event: Stream.Event) {
        notifyObserver()
        // Called after every read: with no targets it costs one atomic load; with a drain
        // already scheduled everywhere, one lock and no allocation.
        guard targetCount.load(ordering: .acquiring) > 0 else { return }
        var first: EventTarget?
        var others: [EventTarget] = []
        let postedAt = latencyProbe == nil ? 0 : DispatchTime.now().uptimeNanoseconds
        lock.withLock {
            if let queueTarget, queueTarget.enqueue(event, at: postedAt) { first = queueTarget }
            for target in runLoopTargets where target.enqueue(event, at: postedAt) {
                if first == nil { first = target } else { others.append(target) }
            }
        }
        guard let first else { return }
        for target in [first] + others {
            target.scheduleDrain { [self] in drain(target) }
        }
    }

    private func drain(_ target: EventTarget) {
        let start = DispatchTime.now().uptimeNanoseconds
        var delivered = 0
        while true {
            if delivered > 0, delivered % Self.eventsBetweenClockChecks == 0,
               DispatchTime.now().uptimeNanoseconds - start >= Self.drainBudgetNanoseconds { break }
            guard let (event, postedAt) = lock.withLock({ target.dequeue() }) else { return }
            if let latencyProbe, event == .hasBytesAvailable {
                latencyProbe(DispatchTime.now().uptimeNanoseconds - postedAt)
            }
            deliver(event)
            delivered += 1
        }
        let more = lock.withLock { target.finishBatch() }
        if more {
            target.scheduleDrain { [self] in drain(target) }
        }
    }

    /// Starts delivering to `runLoop` in `mode`. Keeps a far-future timer in that mode so that
    /// running the run loop waits for events instead of returning at once.
    func add(_ runLoop: RunLoop, mode: RunLoop.Mode) {
        lock.withLock {
            guard !runLoopTargets.contains(where: { $0.runLoop === runLoop && $0.mode == mode }) else { return }
            runLoopTargets.append(RunLoopTarget(runLoop: runLoop, mode: mode))
            countTargets()
        }
    }

    /// Stops delivering to `runLoop` in `mode`; its pending events are dropped.
    func remove(_ runLoop: RunLoop, mode: RunLoop.Mode) {
        lock.withLock {
            runLoopTargets.removeAll { target in
                guard target.runLoop === runLoop && target.mode == mode else { return false }
                target.deactivate()
                return true
            }
            countTargets()
        }
    }

    /// Delivers to `queue` from now on (or to no queue when `nil`).
    func setQueue(_ queue: DispatchQueue?) {
        lock.withLock {
            queueTarget?.deactivate()
            queueTarget = queue.map(QueueTarget.init)
            countTargets()
        }
    }

    /// Drops every target and pending event (when the stream closes).
    func removeAll() {
        lock.withLock {
            runLoopTargets.forEach { $0.deactivate() }
            runLoopTargets.removeAll()
            queueTarget?.deactivate()
            queueTarget = nil
            countTargets()
        }
    }
}

/// One place events are delivered to. State is guarded by the dispatcher's lock.
class EventTarget: @unchecked Sendable {
    /// Events waiting, each with when it was posted (0 unless a latency probe is set).
    private var pending: [(event: Stream.Event, postedAt: UInt64)] = []
    private var drainScheduled = false
    private(set) var isActive = true

    /// Appends `event`; returns whether a drain must be scheduled for it.
    func enqueue(_ event: Stream.Event, at postedAt: UInt64) -> Bool {
        guard isActive else { return false }
        if event == .hasBytesAvailable, pending.last?.event == .hasBytesAvailable { return false }
        pending.append((event, postedAt))
        if drainScheduled { return false }
        drainScheduled = true
        return true
    }

    /// The next event to deliver, or `nil` (and the drain ends) when there is none.
    func dequeue() -> (Stream.Event, UInt64)? {
        guard isActive, !pending.isEmpty else {
            drainScheduled = false
            return nil
        }
        return pending.removeFirst()
    }

    /// Ends a full batch; returns whether another drain must be scheduled.
    func finishBatch() -> Bool {
        if isActive && !pending.isEmpty { return true }
        drainScheduled = false
        return false
    }

    func deactivate() {
        isActive = false
        pending.removeAll()
    }

    /// Runs `drain` later on this target's thread.
    func scheduleDrain(_ drain: @escaping @Sendable () -> Void) {}
}

private final class RunLoopTarget: EventTarget, @unchecked Sendable {
    let runLoop: RunLoop
    let mode: RunLoop.Mode
    /// Keeps the mode non-empty, so `run(mode:before:)` sleeps instead of returning at once.
    private let keepAlive: Timer

    init(runLoop: RunLoop, mode: RunLoop.Mode) {
        self.runLoop = runLoop
        self.mode = mode
        keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
        super.init()
        runLoop.add(keepAlive, forMode: mode)
    }

    override func deactivate() {
        super.deactivate()
        keepAlive.invalidate()
    }

    override func scheduleDrain(_ drain: @escaping @Sendable () -> Void) {
        let timer = Timer(timeInterval: 0, repeats: false) { _ in drain() }
        runLoop.add(timer, forMode: mode)
    }
}

private final class QueueTarget: EventTarget, @unchecked Sendable {
    let queue: DispatchQueue

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    override func scheduleDrain(_ drain: @escaping @Sendable () -> Void) {
        queue.async(execute: drain)
    }
}
