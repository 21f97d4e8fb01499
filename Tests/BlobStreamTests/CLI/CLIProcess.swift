import BlobTestSupport
import Foundation
import Glibc

/// A `blobstream` process that a test talks to while it runs: writes its standard input,
/// sends it signals, and collects what it printed. ``ToolProcess`` covers the run-to-the-end
/// case; this one is for standard input and interruptions.
final class CLIProcess: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let collected = DispatchGroup()
    private let outputData = Locked(Data())
    private let errorData = Locked(Data())

    /// Starts `blobstream` with `arguments`, standard input a pipe the test writes.
    init(_ arguments: [String]) throws {
        // A command that exits without reading all of its input must fail its test, not kill
        // the test runner with SIGPIPE when the test writes on.
        signal(SIGPIPE, SIG_IGN)
        process.executableURL = try ToolProcess.blobstream()
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read as it comes, so a test can wait for a line while the process still runs.
        for (pipe, data) in [(output, outputData), (errors, errorData)] {
            DispatchQueue.global().async(group: collected) {
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { return }
                    data.mutate { $0.append(chunk) }
                }
            }
        }
    }

    /// Runs `blobstream` with `arguments`, feeding it `standardInput`, and waits for it.
    static func run(_ arguments: [String], standardInput: Data) async throws -> Result {
        let process = try CLIProcess(arguments)
        await process.write(standardInput)
        process.closeInput()
        return await process.wait()
    }

    /// Writes `data` to the process's standard input, on a thread of its own (so a process
    /// that reads slowly blocks neither the test nor Swift's cooperative pool).
    func write(_ data: Data) async {
        let handle = input.fileHandleForWriting
        await Self.offThePool { try? handle.write(contentsOf: data) }
    }

    /// Closes standard input: the process sees its end.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Waits until the process catches both SIGINT and SIGTERM (dispatch's signal sources
    /// install a handler: `SigCgt` in /proc), so a signal sent afterwards reaches the
    /// command's own handling rather than killing it before it set that up; `false` if it
    /// never did or exited.
    func waitUntilHandlingSignals(timeout: Double = 30) async -> Bool {
        let process = self.process
        return await Self.offThePool {
            let deadline = Date().addingTimeInterval(timeout)
            let wanted: UInt64 = (1 << (UInt64(SIGINT) - 1)) | (1 << (UInt64(SIGTERM) - 1))
            while Date() < deadline, process.isRunning {
                if let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
                   let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
                   let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16),
                   mask & wanted == wanted {
                    return true
                }
                usleep(20_000)
            }
            return false
        }
    }

    /// Waits until standard error contains `text`; `false` if the process exited first.
    func waitForStandardError(containing text: String, timeout: Double = 60) async -> Bool {
        await wait(for: text, in: errorData, timeout: timeout)
    }

    /// Waits until standard output contains `text`; `false` if the process exited first.
    func waitForStandardOutput(containing text: String, timeout: Double = 60) async -> Bool {
        await wait(for: text, in: outputData, timeout: timeout)
    }

    private func wait(for text: String, in collected: Locked<Data>, timeout: Double) async -> Bool {
        let process = self.process
        return await Self.offThePool {
            let printed = { String(decoding: collected.value, as: UTF8.self).contains(text) }
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if printed() { return true }
                if !process.isRunning { return printed() }
                usleep(50_000)
            }
            return false
        }
    }

    /// Sends `signal` to the process.
    func send(_ signal: Int32) {
        // Never kill(0, …) or a stale pid: that could hit the test runner's own group.
        let pid = process.processIdentifier
        guard pid > 0, process.isRunning else { return }
        kill(pid, signal)
    }

    /// Waits for the process to exit and returns what it printed. A process killed by a
    /// signal reports 128 plus the signal's number, as a shell would.
    /// The waiting happens on a thread of its own: a test that blocked a thread of Swift's
    /// cooperative pool (two on CI) for a child's lifetime would stall every other test.
    func wait() async -> Result {
        closeInput()
        let (process, collected) = (self.process, self.collected)
        await Self.offThePool {
            process.waitUntilExit()
            collected.wait()
        }
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return Result(
            status: status,
            standardOutput: String(decoding: outputData.value, as: UTF8.self),
            standardError: String(decoding: errorData.value, as: UTF8.self))
    }

    /// Runs `body`, which blocks (waits, polls with sleeps), on a new thread, and suspends the
    /// caller until it is done: its timing then never depends on a free cooperative thread.
    private static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// What a finished process printed and how it exited.
    struct Result {
        /// The exit status, or 128 + the signal that killed it.
        var status: Int32
        var standardOutput: String
        var standardError: String
    }
}
