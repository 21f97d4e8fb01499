import Dispatch
import Foundation

/// How long a connection call may wait: until a fixed deadline (a whole phase, such as "the
/// whole answer within the answer timeout"), or at a minimum pace (a bulk body: see
/// ``HTTP1Pace``). There is deliberately no wait for silence alone: each byte would start it
/// again, and a peer sending one byte at a time would hold the call for hours.
package enum HTTP1Wait: Sendable {
    /// Until this moment.
    case until(DispatchTime)
    /// At the pace's minimum speed, and never silent longer than its silence.
    case pace(HTTP1Pace)

    /// The longest wait, in seconds, that any call is given: callers' "no limit" (0, negative,
    /// NaN, infinite), and anything longer, become this much.
    package static let longestWait: TimeInterval = 86_400

    /// `timeout` as a wait the system calls can take: "no limit" and anything longer become
    /// ``longestWait``, anything shorter than 1 ms becomes 1 ms (a 0 wait would mean "never"
    /// to some callers but "at once" to `poll`).
    package static func boundedSeconds(_ timeout: TimeInterval) -> TimeInterval {
        guard timeout.isFinite, timeout > 0 else { return longestWait }
        return min(max(timeout, 0.001), longestWait)
    }

    /// A deadline `timeout` seconds from now, bounded as by ``boundedSeconds(_:)``.
    package static func after(_ timeout: TimeInterval) -> HTTP1Wait {
        .until(.now() + boundedSeconds(timeout))
    }

    /// When a call that waits now must look again.
    var deadline: DispatchTime {
        switch self {
        case .until(let deadline): deadline
        case .pace(let pace): pace.deadline
        }
    }
}

/// One connection call's view of its ``HTTP1Wait``: the one place that says when a call that
/// would block must look again, what progress changes, and what passing a deadline means.
struct HTTP1WaitClock {
    private let wait: HTTP1Wait

    /// A call begins.
    init(_ wait: HTTP1Wait) {
        self.wait = wait
        if case .pace(let pace) = wait { pace.begin() }
    }

    /// The call ends, however.
    func end() {
        if case .pace(let pace) = wait { pace.end() }
    }

    /// Runs `body` (a rate limit's wait) off the clock: a pace does not count that time, as it
    /// does not between calls (README, "A peer that trickles cannot hold a transfer").
    func off(_ body: () throws(HTTP1Error) -> Void) throws(HTTP1Error) {
        guard case .pace(let pace) = wait else { return try body() }
        pace.end()
        defer { pace.begin() }
        try body()
    }

    /// When a blocked call must look again.
    var deadline: DispatchTime { wait.deadline }

    /// `count` bytes went through: a pace counts them (and fails when they closed a window
    /// below its minimum).
    func progress(_ count: Int) throws(HTTP1Error) {
        if case .pace(let pace) = wait { try pace.progress(count) }
    }

    /// The deadline passed: a time-out, except for a pace whose window passed above its
    /// minimum (the call then waits on).
    func expired() throws(HTTP1Error) {
        guard case .pace(let pace) = wait else { throw .timedOut }
        try pace.check()
    }
}
