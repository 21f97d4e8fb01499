import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Waiting for a child `Process` without `waitUntilExit()`: how the tests and the benchmark
/// wait for the programs they run.
///
/// `waitUntilExit()` spins the calling thread's run loop until Foundation's own child handling
/// reaps the child. In loaded suite runs Foundation has left children zombies it never reaped
/// (a `blobstream` run, a `sha256sum`, a tus server), and each wait then spun a core for good,
/// hanging the suite. The child is looked at every millisecond, so a timed command is timed to
/// within one. Here Foundation's word is taken when it comes; a child that has been a
/// zombie for 2 s is reaped here instead, and its status read from `waitpid`.
package enum ChildExit {
    /// How a child ended.
    package struct Status: Sendable, Equatable {
        /// The exit status, or the signal's number when a signal ended it.
        package var code: Int32
        /// The signal that ended it, if one did.
        package var signal: Int32?

        /// A status of `code`, or of `signal` when one ended the child.
        package init(code: Int32, signal: Int32?) {
            self.code = code
            self.signal = signal
        }

        /// Exit status 0.
        package static let success = Status(code: 0, signal: nil)
    }

    /// Waits until `process` (launched) has exited, or `seconds` passed: `nil` then.
    package static func wait(for process: Process, seconds: TimeInterval = .infinity) -> Status? {
        let pid = process.processIdentifier
        let deadline = Date().addingTimeInterval(seconds)
        var zombieSince: Date?
        while Date() < deadline {
            if !process.isRunning {
                let signal = process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
                return Status(code: process.terminationStatus, signal: signal)
            }
            if isZombie(pid) {
                let since = zombieSince ?? Date()
                zombieSince = since
                if Date().timeIntervalSince(since) > 2 {
                    var status: Int32 = 0
                    if waitpid(pid, &status, WNOHANG) == pid { return decode(status) }
                }
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return nil
    }

    /// `wait(for:)` without a bound.
    @discardableResult
    package static func waitForever(_ process: Process) -> Status {
        wait(for: process)!
    }

    /// Whether `pid` is a zombie waiting to be reaped (`/proc/PID/stat` state `Z`).
    private static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        // The state follows the command name, which is in parentheses and may hold spaces.
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// A `waitpid` status (the `WIFEXITED`/`WTERMSIG` macros, which Swift does not import).
    private static func decode(_ status: Int32) -> Status {
        let signal = status & 0x7f
        return signal == 0 ? Status(code: (status >> 8) & 0xff, signal: nil) : Status(code: signal, signal: signal)
    }
}
