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

    /// Writes `text` to standard output.
    func output(_ text: String) {
        write(.standardOutput, text)
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

    /// Writes all of `text` (retrying interrupted writes); a failed write, to a closed pipe
    /// say, has nowhere to be reported and ends the attempt.
    private func write(_ descriptor: FileDescriptor, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { descriptor.writeAll($0) }
    }
}
