import Dispatch
import Foundation

/// How long a connection call may wait: until a fixed deadline (a whole phase, such as "the
/// whole answer within the answer timeout", which a peer sending one byte at a time cannot
/// stretch), for a stretch of silence that each byte of progress starts again, or at a
/// minimum pace (a bulk body: see ``HTTP1Pace``).
package enum HTTP1Wait: Sendable {
    /// Until this moment.
    case until(DispatchTime)
    /// At most this many seconds without progress; see ``boundedSeconds(_:)``. A trickle
    /// stretches it without end: only for waits that something else bounds.
    case silence(TimeInterval)
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

    /// The deadline of a wait that starts (or made progress) now.
    var deadline: DispatchTime {
        switch self {
        case .until(let deadline): deadline
        case .silence(let seconds): .now() + Self.boundedSeconds(seconds)
        case .pace(let pace): pace.deadline
        }
    }
}

/// One connection call's view of its ``HTTP1Wait``: the one place that says when a call that
/// would block must look again, what progress changes, and what passing a deadline means.
struct HTTP1WaitClock {
    private let wait: HTTP1Wait
    private var current: DispatchTime

    /// A call begins.
    init(_ wait: HTTP1Wait) {
        self.wait = wait
        current = wait.deadline
        if case .pace(let pace) = wait { pace.begin() }
    }

    /// The call ends, however.
    func end() {
        if case .pace(let pace) = wait { pace.end() }
    }

    /// When a blocked call must look again.
    var deadline: DispatchTime {
        if case .pace(let pace) = wait { return pace.deadline }
        return current
    }

    /// `count` bytes went through: a silence starts again, a pace counts them (and fails when
    /// they closed a window below its minimum).
    mutating func progress(_ count: Int) throws(HTTP1Error) {
        switch wait {
        case .until: break
        case .silence: current = wait.deadline
        case .pace(let pace): try pace.progress(count)
        }
    }

    /// The deadline passed: a time-out, except for a pace whose window passed above its
    /// minimum (the call then waits on).
    func expired() throws(HTTP1Error) {
        guard case .pace(let pace) = wait else { throw .timedOut }
        try pace.check()
    }
}
