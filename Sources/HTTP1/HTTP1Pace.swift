import Dispatch
import Foundation
internal import SystemCalls

/// The pace of one bulk transfer (a download's body, an upload's request body), for
/// ``HTTP1Wait/pace(_:)``: a minimum speed in the manner of curl's `--speed-limit` and
/// `--speed-time`, and a longest silence.
///
/// Time counts only while a connection call waits on it: a download paused because its
/// buffer is full, or an upload reading its next chunk, is not slow. That time is cut into
/// windows of ``seconds``; a window with fewer than ``minimumBytesPerSecond`` times its length
/// in bytes fails with ``HTTP1Error/tooSlow(bytes:seconds:minimumBytesPerSecond:)``. So a peer
/// that answers one byte at a time fails after one window, however often it sends a byte,
/// while a slow but steady transfer above the minimum is never cut off. Used by one thread at
/// a time (the connection's); the lock only makes it `Sendable`.
package final class HTTP1Pace: Sendable {
    /// The fewest bytes per second a window may average; 0 turns the rule off.
    package let minimumBytesPerSecond: Int
    /// The length of a window, in seconds of waiting.
    package let seconds: TimeInterval
    /// The longest wait without a byte of progress, in seconds.
    package let silence: TimeInterval
    private let state = LockedValue(Clock())

    /// Where the transfer stands, in nanoseconds of time spent inside connection calls.
    private struct Clock {
        /// Waiting time of the calls that ended.
        var spent: UInt64 = 0
        /// When the current call began (uptime), if one runs.
        var callStart: UInt64?
        var windowStart: UInt64 = 0
        var windowBytes = 0
        var lastProgress: UInt64 = 0

        func now(_ uptime: UInt64) -> UInt64 {
            spent + (callStart.map { uptime - $0 } ?? 0)
        }
    }

    /// A pace that fails below `minimumBytesPerSecond` over `seconds`, or after `silence`
    /// seconds without progress (both bounded as by ``HTTP1Wait/boundedSeconds(_:)``).
    package init(minimumBytesPerSecond: Int, seconds: TimeInterval, silence: TimeInterval) {
        self.minimumBytesPerSecond = max(0, minimumBytesPerSecond)
        self.seconds = HTTP1Wait.boundedSeconds(seconds)
        self.silence = HTTP1Wait.boundedSeconds(silence)
    }

    /// A connection call begins to wait on the transfer.
    func begin() {
        let uptime = DispatchTime.now().uptimeNanoseconds
        state.withLock { $0.callStart = uptime }
    }

    /// The call that began ended.
    func end() {
        let uptime = DispatchTime.now().uptimeNanoseconds
        state.withLock { clock in
            clock.spent = clock.now(uptime)
            clock.callStart = nil
        }
    }

    /// `count` bytes went through; fails when that closed a window below the minimum.
    func progress(_ count: Int) throws(HTTP1Error) {
        state.withLock { clock in
            clock.windowBytes += count
            clock.lastProgress = clock.now(DispatchTime.now().uptimeNanoseconds)
        }
        try check()
    }

    /// Fails when the silence passed, or a whole window went by below the minimum; else a
    /// window that passed above it starts the next one.
    func check() throws(HTTP1Error) {
        let uptime = DispatchTime.now().uptimeNanoseconds
        let silenceNanos = Self.nanoseconds(silence)
        let windowNanos = Self.nanoseconds(seconds)
        let minimum = minimumBytesPerSecond
        let failure = state.withLock { clock -> HTTP1Error? in
            let now = clock.now(uptime)
            if now - clock.lastProgress >= silenceNanos { return .timedOut }
            let elapsed = now - clock.windowStart
            guard minimum > 0, elapsed >= windowNanos else { return nil }
            let seconds = Double(elapsed) / 1e9
            if Double(clock.windowBytes) < Double(minimum) * seconds {
                return .tooSlow(bytes: clock.windowBytes, seconds: seconds, minimumBytesPerSecond: minimum)
            }
            clock.windowStart = now
            clock.windowBytes = 0
            return nil
        }
        if let failure { throw failure }
    }

    /// The moment the current call must look again: the end of the silence or of the window,
    /// whichever comes first.
    var deadline: DispatchTime {
        let uptime = DispatchTime.now().uptimeNanoseconds
        let silenceNanos = Self.nanoseconds(silence)
        let windowNanos = minimumBytesPerSecond > 0 ? Self.nanoseconds(seconds) : .max
        let left = state.withLock { clock -> UInt64 in
            let now = clock.now(uptime)
            let silenceLeft = silenceNanos - min(silenceNanos, now - clock.lastProgress)
            let windowLeft = windowNanos - min(windowNanos, now - clock.windowStart)
            return min(silenceLeft, windowLeft)
        }
        return DispatchTime(uptimeNanoseconds: uptime + max(left, 1_000_000))
    }

    private static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        UInt64(seconds * 1e9)
    }
}
