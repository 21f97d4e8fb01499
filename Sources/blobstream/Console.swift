import BlobStream
import Foundation
internal import SystemCalls

/// Where a command writes: results to standard output, errors and progress to standard error.
/// Writes go straight to the file descriptors, unbuffered, so output and errors interleave in
/// the order they happen.
struct Console {
    /// The name errors are prefixed with: `blobstream checksum`.
    var commandName: String

    /// Whether standard error is a terminal (so a progress bar can be drawn there).
    var standardErrorIsTerminal: Bool { FileDescriptor.standardError.isTerminal }

    /// The first failed write to standard output in this process, if any: the command then
    /// fails (``Dispatcher``), since what it printed, a digest or an upload's URL, is lost.
    static let outputFailure = LockedValue<Errno?>(nil)

    /// Writes `text` to standard output.
    func output(_ text: String) {
        if let failure = write(.standardOutput, text) {
            Self.outputFailure.withLock { $0 = $0 ?? failure }
        }
    }

    /// Writes `text` to standard error, with passwords in URLs hidden as ``error(_:)`` hides them.
    func standardError(_ text: String) {
        write(.standardError, PasswordRedaction.hidingPasswords(in: text))
    }

    /// Writes `blobstream <command>: <message>` and a newline to standard error, with the
    /// password of any URL in it hidden: a message names the URLs the user gave, and one given
    /// as `http://user:password@host/` must not print its password (``PasswordRedaction``).
    func error(_ message: String) {
        write(.standardError, "\(commandName): \(PasswordRedaction.hidingPasswords(in: message))\n")
    }

    /// Writes all of `text` (retrying interrupted writes); a failed write ends the attempt.
    @discardableResult
    private func write(_ descriptor: FileDescriptor, _ text: String) -> Errno? {
        Array(text.utf8).withUnsafeBytes { descriptor.writeAll($0) }
    }
}
