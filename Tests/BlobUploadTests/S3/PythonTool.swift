import BlobTestSupport
import Foundation
import SystemCalls

/// Runs the botocore SigV4 oracle in `Scripts/` for the S3 tests.
enum PythonTool {
    /// The repository's `Scripts/` directory.
    static let scripts = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Scripts")

    /// Runs `python3 arguments…` with `input` on standard input; returns standard output, or
    /// throws with standard error when it fails.
    static func run(_ arguments: [String], input: Data = Data()) throws -> Data {
        let result = try ToolProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3"] + arguments, standardInput: input)
        guard result.status == 0, result.signal == nil else {
            throw TestSupportError("python3 \(arguments.prefix(2).joined(separator: " ")) failed (\(result.status)): "
                + result.standardError + " — " + TestServers.instructions)
        }
        return Data(result.standardOutput.utf8)
    }
}
