import Foundation
import SystemCalls

/// A stream delegate that counts events, runs per-event actions, and lets a test wait for a
/// terminal event.
public final class EventRecorder: NSObject, StreamDelegate, @unchecked Sendable {
    private let condition = NSCondition()
    private var events: [Stream.Event] = []
    private var actions: [UInt: (Stream) -> Void] = [:]
    private var threadIDs: Set<ObjectIdentifier> = []

    public override init() {}

    /// Runs `action` whenever `event` arrives, after it is recorded.
    public func on(_ event: Stream.Event, _ action: @escaping (Stream) -> Void) {
        condition.withLock { actions[event.rawValue] = action }
    }

    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let action = condition.withLock { () -> ((Stream) -> Void)? in
            events.append(eventCode)
            threadIDs.insert(ObjectIdentifier(Thread.current))
            condition.broadcast()
            return actions[eventCode.rawValue]
        }
        action?(aStream)
    }

    /// Every event so far, in order.
    public var all: [Stream.Event] { condition.withLock { events } }

    /// How many times `event` arrived.
    public func count(_ event: Stream.Event) -> Int { condition.withLock { events.filter { $0 == event }.count } }

    /// The threads events arrived on.
    public var threads: Set<ObjectIdentifier> { condition.withLock { threadIDs } }

    /// Waits until `event` arrived or `timeout` passed; returns whether it arrived.
    @discardableResult
    public func wait(for event: Stream.Event, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while !events.contains(event) {
                if !condition.wait(until: deadline) { return events.contains(event) }
            }
            return true
        }
    }
}

/// A thread that runs its own run loop in one mode, for delivering stream events.
public final class RunLoopThread: @unchecked Sendable {
    private final class Shared: @unchecked Sendable {
        let condition = NSCondition()
        var runLoop: RunLoop?
        var stopped = false
    }

    private let shared = Shared()
    /// The thread that runs the loop.
    public let thread: Thread
    /// The mode the loop runs in.
    public let mode: RunLoop.Mode

    /// Starts the thread with `stream` scheduled on its run loop and opened there, so the
    /// stream's events reach its delegate on this thread.
    public convenience init(name: String, mode: RunLoop.Mode = .default, opening stream: Stream) {
        let box = Unchecked(stream)
        self.init(name: name, mode: mode) { loop, mode in
            box.value.schedule(in: loop, forMode: mode)
            box.value.open()
        }
    }

    /// Starts the thread; `schedule` runs on it, with its run loop, before the loop starts.
    public init(name: String, mode: RunLoop.Mode = .default, schedule: @escaping @Sendable (RunLoop, RunLoop.Mode) -> Void) {
        self.mode = mode
        let shared = self.shared
        thread = Thread {
            let loop = RunLoop.current
            loop.add(Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }, forMode: mode)
            schedule(loop, mode)
            shared.condition.withLock { shared.runLoop = loop; shared.condition.broadcast() }
            while !shared.condition.withLock({ shared.stopped }) {
                // A long wait: an event that failed to wake the loop would show as a timeout.
                _ = loop.run(mode: mode, before: Date(timeIntervalSinceNow: 30))
            }
        }
        thread.name = name
        thread.start()
        shared.condition.withLock { while shared.runLoop == nil { shared.condition.wait() } }
    }

    /// Ends the loop.
    public func stop() {
        let loop = shared.condition.withLock { shared.stopped = true; return shared.runLoop }
        loop?.add(Timer(timeInterval: 0, repeats: false) { _ in }, forMode: mode)
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
public func eventually(timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while !condition() {
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: 0.002)
    }
    return true
}

/// Carries a value that is not `Sendable` (a `Stream`) into a closure that must be; the test
/// guarantees the value is used safely (streams guard their own state).
public struct Unchecked<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}

/// A value shared between a test and the threads or callbacks it waits for: a
/// ``LockedValue``, with a getter and setter for tests.
package typealias Locked = LockedValue

extension LockedValue {
    /// The value, read or replaced under the lock.
    package var value: Value {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }

    /// Changes the value in place under the lock.
    package func mutate<R>(_ body: (inout Value) -> R) -> R { withLock(body) }
}
