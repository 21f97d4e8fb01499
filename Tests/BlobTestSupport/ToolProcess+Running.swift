import Foundation
import Glibc
import SystemCalls

extension ToolProcess {
    /// A started child: what it prints is collected as it comes, so a test can wait for a line
    /// while the child runs, write its standard input, and signal it.
    public final class Running: @unchecked Sendable {
        private let process = Process()
        private let input: Pipe?
        private let collected = DispatchGroup()
        private let feeding = DispatchGroup()
        private let outputData = Locked(Data())
        private let errorData = Locked(Data())

        init(_ url: URL, _ arguments: [String], environment: [String: String], standardInput: Input) throws {
            // A child that exits without reading all of its input must fail its test, not kill
            // the test runner with SIGPIPE when the test writes on.
            signal(SIGPIPE, SIG_IGN)
            process.executableURL = url
            process.arguments = arguments
            process.environment = environment
            switch standardInput {
            case .nothing:
                input = nil
                process.standardInput = FileHandle.nullDevice
            case .pipe:
                input = Pipe()
                process.standardInput = input
            case .file(let handle):
                input = nil
                process.standardInput = handle
            }
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            // Read both as they come: a chatty child never blocks on a full pipe.
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

        /// The child's process id.
        public var processIdentifier: Int32 { process.processIdentifier }
        /// Whether the child has not exited yet.
        public var isRunning: Bool { process.isRunning }

        // MARK: Standard input (started with ``Input/pipe``)

        /// Writes `data` to the child's standard input, on a thread of its own (so a child that
        /// reads slowly blocks neither the test nor Swift's cooperative pool).
        public func feed(_ data: Data) async {
            await offThePool { self.write(data) }
        }

        /// Writes `data` to the child's standard input, then closes it, on a thread of its own
        /// that starts now: the child gets its input even while the test's task waits for a
        /// thread of a busy cooperative pool. ``finish()`` waits for the write.
        public func feedThenClose(_ data: Data) {
            onOwnThread(group: feeding) {
                self.write(data)
                self.closeInput()
            }
        }

        /// ``feed(_:)`` blocking the calling thread until the child took `data`.
        public func write(_ data: Data) {
            try? input?.fileHandleForWriting.write(contentsOf: data)
        }

        /// Closes standard input: the child sees its end.
        public func closeInput() {
            try? input?.fileHandleForWriting.close()
        }

        // MARK: Waiting for the child and signalling it

        /// What must have happened before ``send(_:once:)`` signals the child.
        public struct Readiness: Sendable {
            /// The child catches both SIGINT and SIGTERM (dispatch's signal sources install a
            /// handler: `SigCgt` in /proc), so the signal reaches the command's own handling
            /// rather than killing it before it set that up.
            public var handlesSignals: Bool
            /// Standard output contains this.
            public var printed: String?
            /// Standard error contains this.
            public var complained: String?

            public init(handlesSignals: Bool = true, printed: String? = nil, complained: String? = nil) {
                self.handlesSignals = handlesSignals
                self.printed = printed
                self.complained = complained
            }
        }

        /// Waits until `readiness` holds (or its waits time out, or the child exits), then sends
        /// `signal` at once; returns whether each condition was met (the signal is sent either
        /// way). Waiting and signalling both happen on a thread of its own: were the test's task
        /// to resume between them, a busy cooperative pool could hold the signal back past the
        /// command's own deadlines.
        public func send(_ signal: Int32, once readiness: Readiness) async -> (handlesSignals: Bool, printed: Bool, complained: Bool) {
            await offThePool { [self] in
                let handles = !readiness.handlesSignals || waitUntilHandlingSignals()
                let printed = readiness.printed.map { waitFor($0, in: outputData, timeout: 60) } ?? true
                let complained = readiness.complained.map { waitFor($0, in: errorData, timeout: 60) } ?? true
                send(signal)
                return (handles, printed, complained)
            }
        }

        /// Polls /proc until the child handles SIGINT and SIGTERM; `false` if it never did or
        /// exited. Blocks the calling thread: from a test's task use ``send(_:once:)``.
        public func waitUntilHandlingSignals(timeout: Double = 30) -> Bool {
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

        /// Waits until standard output contains `text`; `false` if the child exited first.
        /// Blocks the calling thread: from a test's task use ``send(_:once:)``.
        public func waitForStandardOutput(containing text: String, timeout: Double = 60) -> Bool {
            waitFor(text, in: outputData, timeout: timeout)
        }

        /// Waits until standard error contains `text`; `false` if the child exited first.
        public func waitForStandardError(containing text: String, timeout: Double = 60) -> Bool {
            waitFor(text, in: errorData, timeout: timeout)
        }

        /// The first line of standard output, once printed; `nil` if the child exited first or
        /// `timeout` passed. Blocks the calling thread.
        public func firstLine(timeout: Double) -> String? {
            guard waitFor("\n", in: outputData, timeout: timeout) else { return nil }
            return String(decoding: outputData.value, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init)
        }

        /// Waits, off the cooperative pool, until the child has exited (or is a zombie) with its
        /// standard input still open, or `timeout` passed; returns whether it exited. For a test
        /// whose child must end by a signal alone: ``finished()`` closes standard input first.
        public func exited(timeout: Double = 60) async -> Bool {
            await offThePool { [self] in
                let deadline = Date().addingTimeInterval(timeout)
                while Date() < deadline {
                    let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
                    if !process.isRunning || status?.contains("State:\tZ") != false { return true }
                    usleep(20_000)
                }
                return false
            }
        }

        /// Sends `signal` to the child.
        public func send(_ signal: Int32) {
            // Never kill(0, …) or a stale pid: that could hit the test runner's own group.
            let pid = process.processIdentifier
            guard pid > 0, process.isRunning else { return }
            kill(pid, signal)
        }

        /// Closes standard input, waits for the child and says how it ended. The waiting
        /// happens on a thread of its own, and the caller's task is suspended meanwhile: Swift's
        /// cooperative pool has one thread per core (two on CI), and a test that blocked one of
        /// them for a child's lifetime would stall every other test.
        public func finished() async -> Result {
            await offThePool { self.finish() }
        }

        /// ``finished()`` on the calling thread, which it blocks until the child has exited: for
        /// code that runs on a thread of its own already, never for a test's task.
        public func finish() -> Result {
            feeding.wait()
            closeInput()
            let ended = ChildExit.waitForever(process)
            collected.wait()
            return Result(
                status: ended.code,
                standardOutput: String(decoding: outputData.value, as: UTF8.self),
                standardError: String(decoding: errorData.value, as: UTF8.self),
                signal: ended.signal)
        }

        /// Polls until `collected` contains `text`; `false` if the child exited first.
        private func waitFor(_ text: String, in collected: Locked<Data>, timeout: Double) -> Bool {
            let printed = { String(decoding: collected.value, as: UTF8.self).contains(text) }
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if printed() { return true }
                if !process.isRunning {
                    // What it printed last may still be on its way through the pipe.
                    self.collected.wait()
                    return printed()
                }
                usleep(20_000)
            }
            return false
        }
    }
}
