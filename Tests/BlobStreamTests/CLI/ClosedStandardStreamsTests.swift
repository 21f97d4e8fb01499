import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `blobstream` started with standard input or output closed, or with output that cannot be
/// written: a clear failure (status 1), never a digest or an upload URL lost with status 0,
/// nor "standard input" read from whatever file or socket took its number.
@Suite struct ClosedStandardStreamsTests {
    /// Runs `blobstream arguments` through the shell, with `redirection` (`<&-`, `>/dev/full`).
    static func run(_ arguments: [String], _ redirection: String) async throws -> ToolProcess.Result {
        let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
        return try await ToolProcess.execute(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \"$0\" \(quoted) \(redirection)", try ToolProcess.blobstream().path])
    }

    @Test func outputThatCannotBeWrittenFailsTheCommand() async throws {
        let full = try await Self.run(["checksum", "/etc/hostname"], ">/dev/full")
        #expect(full.status == 1)
        #expect(full.standardError.contains("standard output: write failed: No space left on device"), "\(full.standardError)")

        let closed = try await Self.run(["checksum", "/etc/hostname"], ">&-")
        #expect(closed.status == 1)
        #expect(closed.standardError.contains("standard output is closed"), "\(closed.standardError)")
    }

    /// Each command that reads `-` says so at once, before any request.
    @Test(arguments: [
        ["checksum", "-"],
        ["upload", "-", "http://127.0.0.1:1/files/"],
        ["put", "-", "http://127.0.0.1:1/x"],
        ["s3", "cp", "--endpoint", "http://127.0.0.1:1", "-", "s3://bucket/key"],
    ])
    func aClosedStandardInputIsNamed(arguments: [String]) async throws {
        let result = try await Self.run(arguments, "<&-")
        #expect(result.status != 0)
        #expect(result.standardError.contains("standard input: it is closed"), "\(result.standardError)")
        #expect(!result.standardError.contains("127.0.0.1:1"), "nothing was sent: \(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }
}
