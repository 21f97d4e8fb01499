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

    /// What a child reads on its standard input.
    public enum Input: Sendable {
        /// Nothing: /dev/null.
        case nothing
        /// A pipe the test writes (``Running/feed(_:)``, ``Running/write(_:)``) and closes
        /// (``Running/closeInput()``).
        case pipe
        /// An open file.
        case file(FileHandle)
    }

    /// Runs `url` with `arguments`, feeding it `standardInput` (nothing: /dev/null), and waits
    /// for it without holding a thread of Swift's cooperative pool (see ``Running/finished()``):
    /// what a test's task calls. `environment` is added to this process's environment.
    public static func execute(
        _ url: URL, _ arguments: [String], environment: [String: String] = [:], standardInput: Data? = nil
    ) async throws -> Result {
        let child = try start(url, arguments, environment: environment, standardInput: standardInput == nil ? .nothing : .pipe)
        if let standardInput { child.feedThenClose(standardInput) }
        return await child.finished()
    }

    /// ``execute(_:_:environment:standardInput:)`` blocking the calling thread until the child
    /// exits: only for code on a thread of its own, never for a test's task.
    public static func run(
        _ url: URL, _ arguments: [String], environment: [String: String] = [:], standardInput: Data? = nil
    ) throws -> Result {
        let child = try start(url, arguments, environment: environment, standardInput: standardInput == nil ? .nothing : .pipe)
        if let standardInput { child.write(standardInput) }
        return child.finish()
    }

    /// Starts `url` with `arguments`, for a test that acts on the child while it runs (writes
    /// its input, waits for a line, signals it); ``Running/finished()`` says how it ended.
    public static func start(
        _ url: URL, _ arguments: [String], environment: [String: String] = [:], standardInput: Input = .nothing
    ) throws -> Running {
        try Running(url, arguments, environment: childEnvironment(environment), standardInput: standardInput)
    }

    /// ``start(_:_:environment:standardInput:)`` of the package's `blobstream`.
    public static func startBlobstream(
        _ arguments: [String], environment: [String: String] = [:], standardInput: Input = .nothing
    ) throws -> Running {
        try start(blobstream(), arguments, environment: environment, standardInput: standardInput)
    }
}

extension FileHandle {
    /// The bytes up to the next newline (without it), or to the end: a child's first line, such
    /// as the port a scripted server prints once it listens. Reads a byte at a time, so nothing
    /// after the line is taken from the handle.
    public func readLine() throws -> String {
        var line = Data()
        while let byte = try read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        return String(decoding: line, as: UTF8.self)
    }
}
