import BlobTestSupport
import Foundation
import SystemCalls

/// `blobstream` as a child whose standard output is read while it runs, so a test can act the
/// moment the upload id is printed (asking the server instead can lose the race on a loaded
/// machine: the upload may be done before a poll answers).
final class S3CLIChild: @unchecked Sendable {
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let printed = NSCondition()
    private var outputText = ""
    private var outputClosed = false
    private let readers = DispatchGroup()
    private let errorText = Locked("")

    /// Starts `blobstream arguments…`; standard input is `standardInput`, or /dev/null.
    init(_ arguments: [String], environment: [String: String], standardInput: FileHandle? = nil) throws {
        process.executableURL = try ToolProcess.blobstream()
        process.arguments = arguments
        process.environment = ToolProcess.childEnvironment(environment)
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = standardInput ?? FileHandle.nullDevice
        try process.run()
        let reading = output.fileHandleForReading
        onOwnThread(group: readers) { [self] in
            while true {
                let data = reading.availableData
                printed.withLock {
                    if data.isEmpty { outputClosed = true } else { outputText += String(decoding: data, as: UTF8.self) }
                    printed.broadcast()
                }
                if data.isEmpty { return }
            }
        }
        let errorHandle = errors.fileHandleForReading
        onOwnThread(group: readers) { [errorText] in
            errorText.value = String(decoding: errorHandle.readDataToEndOfFile(), as: UTF8.self)
        }
    }

    var processIdentifier: Int32 { process.processIdentifier }

    /// The first line of standard output, once printed; `nil` if the child closed its output
    /// first or `timeout` passed.
    func firstLine(timeout: TimeInterval) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return printed.withLock {
            while !outputText.contains("\n"), !outputClosed, Date() < deadline {
                _ = printed.wait(until: deadline)
            }
            return outputText.split(separator: "\n", omittingEmptySubsequences: false).count > 1
                ? String(outputText.split(separator: "\n").first ?? "") : nil
        }
    }

    /// Waits for the child; returns its status (or the signal that ended it) and output.
    func finish() -> (status: Int32, signal: Int32?, output: String, errors: String) {
        readers.wait()
        let ended = ChildExit.waitForever(process)
        return (ended.code, ended.signal, printed.withLock { outputText }, errorText.value)
    }
}
