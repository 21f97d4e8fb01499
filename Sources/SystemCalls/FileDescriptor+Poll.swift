#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``FileDescriptor/poll(for:orWakeUpFrom:milliseconds:)`` waits for.
package enum PollEvent: Sendable {
    /// Bytes, the end, or an error to read.
    case readable
    /// Room to write, or an error (also: a non-blocking connect has finished).
    case writable

    var bits: Int16 { Int16(self == .readable ? POLLIN : POLLOUT) }
}

/// What a ``FileDescriptor/poll(for:orWakeUpFrom:milliseconds:)`` found.
package struct PollReadiness: Sendable, Equatable {
    /// The descriptor has the event, an error or a hang-up: the next call will not wait.
    package var isReady: Bool
    /// The wake-up descriptor has input: someone wants the waiter to stop.
    package var isWokenUp: Bool
}

extension FileDescriptor {
    /// `poll(2)` of this descriptor for `event` and, when given, of `wakeUp` for input (the read
    /// end of a pipe that another thread writes to with ``wakeUp()``), for at most
    /// `milliseconds`: -1 waits without limit, 0 only looks.
    package func poll(for event: PollEvent, orWakeUpFrom wakeUp: FileDescriptor? = nil, milliseconds: Int32) -> Result<PollReadiness, Errno> {
        var fds = [pollfd(fd: raw, events: event.bits, revents: 0)]
        if let wakeUp { fds.append(pollfd(fd: wakeUp.raw, events: Int16(POLLIN), revents: 0)) }
        return withExtendedLifetime(wakeUp) {
            fds.withUnsafeMutableBufferPointer { fds in
                valueOrErrno { systemPoll(fds.baseAddress!, fds.count, milliseconds) }.map { _ in
                    PollReadiness(isReady: fds[0].revents != 0, isWokenUp: fds.count > 1 && fds[1].revents != 0)
                }
            }
        }
    }
}
