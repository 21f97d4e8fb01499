import Foundation

/// Where a command writes: results to standard output, errors and progress to standard error.
/// Writes go straight to the file descriptors, unbuffered, so output and errors interleave in
/// the order they happen.
struct Console {
    /// The name errors are prefixed with: `blobstream checksum`.
    var commandName: String

    /// Whether standard error is a terminal (so a progress bar can be drawn there).
    var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Writes `text` to standard output.
    func output(_ text: String) {
        write(STDOUT_FILENO, text)
    }

    /// Writes `text` to standard error as is.
    func standardError(_ text: String) {
        write(STDERR_FILENO, text)
    }

    /// Writes `blobstream <command>: <message>` and a newline to standard error.
    func error(_ message: String) {
        write(STDERR_FILENO, "\(commandName): \(message)\n")
    }

    private func write(_ descriptor: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
