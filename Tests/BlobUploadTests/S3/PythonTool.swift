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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let group = DispatchGroup()
        let errors = Locked<Data>(Data())
        onOwnThread(group: group) {
            stdin.fileHandleForWriting.write(input)
            try? stdin.fileHandleForWriting.close()
        }
        onOwnThread(group: group) { errors.value = stderr.fileHandleForReading.readDataToEndOfFile() }
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let ended = ChildExit.waitForever(process)
        group.wait()
        guard ended == .success else {
            throw TestSupportError("python3 \(arguments.prefix(2).joined(separator: " ")) failed (\(ended.code)): "
                + String(decoding: errors.value, as: UTF8.self) + " — " + TestServers.instructions)
        }
        return output
    }
}
