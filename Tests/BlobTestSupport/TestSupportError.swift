/// A failure of the shared test machinery itself (a server that is not running, a socket or
/// file operation that failed), worded so the test's failure message says what to do.
public struct TestSupportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The whole explanation, shown as the test's failure.
    public let message: String

    /// Wraps `message` as an error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message itself, so Swift Testing prints it verbatim.
    public var description: String { message }
}
