#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process-wide calls of a command-line program: what a signal does, and leaving at once.
package enum ProcessSignals {
    /// Makes the process ignore `signal`, so that a dispatch signal source alone sees it (the
    /// default action would end the process first).
    package static func ignore(_ signal: Int32) {
        systemIgnoreSignal(signal)
    }

    /// Gives `signal` its default action again.
    package static func restoreDefault(_ signal: Int32) {
        systemDefaultSignal(signal)
    }

    /// `_exit(2)`: ends the process with `status` at once, without running `atexit` handlers
    /// or flushing buffers that a thread stuck in them might hold.
    package static func exitImmediately(status: Int32) -> Never {
        systemExitImmediately(status)
    }
}
