#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call's `errno`, typed so that it cannot be confused with a byte count.
package struct Errno: Error, Equatable, Sendable {
    /// The C `errno` value.
    package var rawValue: Int32

    /// The error `rawValue`.
    package init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The current thread's `errno`.
    package static var current: Errno { Errno(errno) }

    /// `ENOENT`: no such file or directory.
    package static let notFound = Errno(ENOENT)
    /// `EEXIST`: something is there already.
    package static let exists = Errno(EEXIST)
    /// `EACCES`: permission denied.
    package static let permissionDenied = Errno(EACCES)

    /// Whether a non-blocking descriptor had nothing to give or take right now.
    package var isWouldBlock: Bool { rawValue == EAGAIN || rawValue == EWOULDBLOCK }

    /// The C library's text and the number, e.g. "Connection refused (errno 111)".
    package var text: String { "\(String(cString: strerror(rawValue))) (errno \(rawValue))" }
}
