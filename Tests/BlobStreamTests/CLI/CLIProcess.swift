import BlobTestSupport
import Foundation
import Glibc
import SystemCalls

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
        process.environment = ToolProcess.childEnvironment()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read as it comes, so a test can wait for a line while the process still runs.
        for (pipe, data) in [(output, outputData), (errors, errorData)] {
            onOwnThread(group: collected) {
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { return }
                    data.mutate { $0.append(chunk) }
                }
            }
        }
    }

    /// Runs `blobstream` with `arguments`, feeding it `standardInput`, and waits for it, off
    /// Swift's cooperative pool (see ``exited()``).
    static func execute(_ arguments: [String], standardInput: Data) async throws -> Result {
        let process = try CLIProcess(arguments)
        await process.feed(standardInput)
        process.closeInput()
        return await process.exited()
    }

    /// ``execute(_:standardInput:)`` blocking the calling thread: only for code on a thread of
    /// its own, never for a test's task.
    static func run(_ arguments: [String], standardInput: Data) throws -> Result {
        let process = try CLIProcess(arguments)
        process.write(standardInput)
        process.closeInput()
        return process.wait()
    }

    /// Writes `data` to the process's standard input, on a thread of its own (so a process
    /// that reads slowly blocks neither the test nor Swift's cooperative pool).
    func feed(_ data: Data) async {
        await Self.offThePool { self.write(data) }
    }

    /// ``feed(_:)`` blocking the calling thread until the process took `data`.
    func write(_ data: Data) {
        try? input.fileHandleForWriting.write(contentsOf: data)
    }

    /// Closes standard input: the process sees its end.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// What must have happened before ``send(_:once:)`` signals the process.
    struct Readiness: Sendable {
        /// The process catches both SIGINT and SIGTERM (dispatch's signal sources install a
        /// handler: `SigCgt` in /proc), so the signal reaches the command's own handling rather
        /// than killing it before it set that up.
        var handlesSignals = true
        /// Standard output contains this.
        var printed: String?
        /// Standard error contains this.
        var complained: String?
    }

    /// Waits until `readiness` holds (or its waits time out, or the process exits), then sends
    /// `signal` at once; returns whether each condition was met (the signal is sent either
    /// way). Waiting and signalling both happen on a thread of its own: were the test's task to
    /// resume between them, a busy cooperative pool could hold the signal back past the
    /// command's own deadlines.
    func send(_ signal: Int32, once readiness: Readiness) async -> (handlesSignals: Bool, printed: Bool, complained: Bool) {
        await Self.offThePool { [self] in
            let handles = !readiness.handlesSignals || waitUntilHandlingSignals()
            let printed = readiness.printed.map { waitFor($0, in: outputData, timeout: 60) } ?? true
            let complained = readiness.complained.map { waitFor($0, in: errorData, timeout: 60) } ?? true
            send(signal)
            return (handles, printed, complained)
        }
    }

    /// Polls /proc until the process handles SIGINT and SIGTERM; `false` if it never did or
    /// exited. Blocks the calling thread: from a test's task use ``send(_:once:)``.
    func waitUntilHandlingSignals(timeout: Double = 30) -> Bool {
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

    /// Waits until standard output contains `text`; `false` if the process exited first.
    /// Blocks the calling thread: from a test's task use ``send(_:once:)``.
    func waitForStandardOutput(containing text: String, timeout: Double = 60) -> Bool {
        waitFor(text, in: outputData, timeout: timeout)
    }

    /// Waits until standard error contains `text`; `false` if the process exited first.
    /// Blocks the calling thread: from a test's task use ``send(_:once:)``.
    func waitForStandardError(containing text: String, timeout: Double = 60) -> Bool {
        waitFor(text, in: errorData, timeout: timeout)
    }

    /// Polls until `collected` contains `text`; `false` if the process exited first.
    private func waitFor(_ text: String, in collected: Locked<Data>, timeout: Double) -> Bool {
        let printed = { String(decoding: collected.value, as: UTF8.self).contains(text) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if printed() { return true }
            if !process.isRunning { return printed() }
            usleep(50_000)
        }
        return false
    }

    /// Sends `signal` to the process.
    func send(_ signal: Int32) {
        // Never kill(0, …) or a stale pid: that could hit the test runner's own group.
        let pid = process.processIdentifier
        guard pid > 0, process.isRunning else { return }
        kill(pid, signal)
    }

    /// Waits for the process to exit and returns what it printed. A process killed by a
    /// signal reports 128 plus the signal's number, as a shell would. The waiting happens on a
    /// thread of its own: a test that blocked a thread of Swift's cooperative pool (two on CI)
    /// for a child's lifetime would stall every other test.
    func exited() async -> Result {
        await Self.offThePool { self.wait() }
    }

    /// ``exited()`` blocking the calling thread: only for code on a thread of its own.
    func wait() -> Result {
        closeInput()
        let ended = ChildExit.waitForever(process)
        collected.wait()
        let status = ended.signal.map { 128 + $0 } ?? ended.code
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
