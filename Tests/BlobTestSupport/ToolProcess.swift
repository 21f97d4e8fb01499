import Foundation

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
    }

    /// The `blobstream` executable built next to the running test bundle.
    /// - Throws: a message saying how to build it when it is missing.
    public static func blobstream() throws -> URL {
        let testExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let url = testExecutable.deletingLastPathComponent().appendingPathComponent("blobstream")
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw TestSupportError("\(url.path) is missing; build it first with 'swift build --product blobstream' (swift test builds it too)")
        }
        return url
    }

    /// Runs `url` with `arguments` and standard input from /dev/null, and waits for it.
    public static func run(_ url: URL, _ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes before waiting, so a chatty child never blocks on a full pipe.
        let errorData = Locked(Data())
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            errorData.value = errors.fileHandleForReading.readDataToEndOfFile()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData.value, as: UTF8.self)
        )
    }
}
