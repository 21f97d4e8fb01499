import Foundation
import SystemCalls

/// Runs command-line programs from tests: the package's own `blobstream`, or reference tools.
public enum ToolProcess {
    /// What a finished program printed and how it exited.
    public struct Result: Sendable {
        /// The exit status.
        public var status: Int32
        /// Everything written to standard output.
        public var standardOutput: String
        /// Everything written to standard error.
        public var standardError: String
        /// The signal that killed the program (a trap is SIGILL or SIGTRAP), or `nil` when it exited.
        public var signal: Int32?
    }

    /// The `XDG_STATE_HOME` of every child this test process starts, unless a test gives its
    /// own: the upload journal of `blobstream upload` and `s3 cp` lives there, in this
    /// process's scratch space, never in the user's own state directory.
    public static var stateHome: String {
        ((try? ScratchSpace.directory()) ?? NSTemporaryDirectory()) + "/xdg-state"
    }

    /// The environment of a child: this process's, its state home ``stateHome``, and `added`.
    public static func childEnvironment(_ added: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(["XDG_STATE_HOME": stateHome]) { $1 }.merging(added) { $1 }
    }

    /// The `blobstream` executable built next to the running test bundle.
    /// - Throws: a message saying how to build it when it is missing.
    public static func blobstream() throws -> URL {
        try builtExecutable("blobstream")
    }

    /// The executable target `name` of this package, built next to the running test bundle.
    /// - Throws: a message saying how to build it when it is missing.
    public static func builtExecutable(_ name: String) throws -> URL {
        let testExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let url = testExecutable.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw TestSupportError("\(url.path) is missing; build it first with 'swift build --product \(name)' (swift test builds it too)")
        }
        return url
    }

    /// Runs `url` with `arguments` and standard input from /dev/null, and waits for it without
    /// holding a thread of Swift's cooperative pool (see ``Running/finished()``): what a test's
    /// task calls. `environment` is added to this process's environment.
    public static func execute(_ url: URL, _ arguments: [String], environment: [String: String] = [:]) async throws -> Result {
        try await start(url, arguments, environment: environment).finished()
    }

    /// ``execute(_:_:environment:)`` blocking the calling thread until the child exits: only
    /// for code on a thread of its own, never for a test's task.
    public static func run(_ url: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        try start(url, arguments, environment: environment).finish()
    }

    /// Starts `url` with `arguments` and standard input from /dev/null, for a test that acts on
    /// the child while it runs; ``Running/finish()`` collects what it printed.
    public static func start(_ url: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> Running {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = childEnvironment(environment)
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Running(process: process, output: output, errors: errors)
    }

    /// A started child whose output is read when it is finished.
    public struct Running: @unchecked Sendable {
        let process: Process
        let output: Pipe
        let errors: Pipe

        /// The child's process id.
        public var processIdentifier: Int32 { process.processIdentifier }
        /// Whether the child has not exited yet.
        public var isRunning: Bool { process.isRunning }

        /// Reads both pipes to their end, waits for the child and says how it ended.
        ///
        /// The waiting happens on a thread of its own, and the caller's task is suspended
        /// meanwhile: Swift's cooperative pool has one thread per core (two on CI), and a test
        /// that blocked one of them for a child's lifetime would stall every other test.
        public func finished() async -> Result {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: finish()) }
            }
        }

        /// ``finished()`` on the calling thread, which it blocks until the child has exited: for
        /// code that runs on a thread of its own already, never for a test's task.
        public func finish() -> Result {
            // Read both pipes before waiting, so a chatty child never blocks on a full pipe.
            let errorData = Locked(Data())
            let group = DispatchGroup()
            let errors = self.errors
            onOwnThread(group: group) {
                errorData.value = errors.fileHandleForReading.readDataToEndOfFile()
            }
            let outputData = output.fileHandleForReading.readDataToEndOfFile()
            group.wait()
            let ended = ChildExit.waitForever(process)
            return Result(
                status: ended.code,
                standardOutput: String(decoding: outputData, as: UTF8.self),
                standardError: String(decoding: errorData.value, as: UTF8.self),
                signal: ended.signal
            )
        }
    }
}
