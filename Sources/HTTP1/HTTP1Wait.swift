import Dispatch
import Foundation

/// How long a connection call may wait: until a fixed deadline (a whole phase, such as
/// "connected and answered within the request timeout"), or for a stretch of silence that each
/// byte of progress starts again (a slow but steady transfer is not cut off).
package enum HTTP1Wait: Sendable {
    /// Until this moment.
    case until(DispatchTime)
    /// At most this many seconds without progress; see ``boundedSeconds(_:)``.
    case silence(TimeInterval)

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
        }
    }
}
