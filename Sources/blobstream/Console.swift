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

    /// Writes `text` to standard error as is.
    func standardError(_ text: String) {
        write(.standardError, text)
    }

    /// Writes `blobstream <command>: <message>` and a newline to standard error.
    func error(_ message: String) {
        write(.standardError, "\(commandName): \(message)\n")
    }

    /// Writes all of `text` (retrying interrupted writes); a failed write, to a closed pipe
    /// say, has nowhere to be reported and ends the attempt.
    private func write(_ descriptor: FileDescriptor, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { descriptor.writeAll($0) }
    }
}
