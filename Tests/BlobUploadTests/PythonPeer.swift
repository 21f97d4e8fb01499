import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A scripted peer: a Python program (`python3 -c program arguments…`) that prints its port on
/// its first line and serves as it is written to. It can be told things on its standard
/// input (``tell(_:)``), and is killed by ``stop()`` (or when freed).
final class PythonPeer: @unchecked Sendable {
    let port: Int
    private let process = Process()
    private let input = Pipe()

    init(program: String, arguments: [String] = []) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", program] + arguments
        process.standardInput = input
        process.standardOutput = output
        // Not the test runner's: a peer still running would hold its output open.
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let port = Int(try output.fileHandleForReading.readLine()) else {
            kill(process.processIdentifier, SIGKILL)
            throw TestSupportError("the scripted peer did not start (python3)")
        }
        self.port = port
    }

    /// A TLS peer: the program gets the test servers' certificate and key before `arguments`.
    static func tls(program: String, arguments: [String] = []) throws -> PythonPeer {
        try TestServers.requireTLS()
        let tls = (TestServers.tlsCAPath as NSString).deletingLastPathComponent
        return try PythonPeer(program: program, arguments: [tls + "/server.pem", tls + "/server.key"] + arguments)
    }

    deinit { stop() }

    /// Writes `line` to the peer's standard input.
    func tell(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Kills the peer (SIGKILL: a test runner may leave SIGTERM ignored in its children).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
