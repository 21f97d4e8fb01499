import BlobTestSupport
import Foundation
import Testing

/// A scripted TLS peer: a Python program with `ssl`, given the test servers' certificate and
/// key (then `arguments`), that prints its port on its first line and serves one connection.
final class PythonTLSPeer {
    let port: Int
    private let process = Process()

    init(program: String, arguments: [String] = []) throws {
        try TestServers.requireTLS()
        let tls = (TestServers.tlsCAPath as NSString).deletingLastPathComponent
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", program, tls + "/server.pem", tls + "/server.key"] + arguments
        process.standardOutput = output
        try process.run()
        guard let port = Int(try output.fileHandleForReading.readLine()) else {
            if process.isRunning { process.terminate() }
            throw TestSupportError("the TLS peer did not start (python3 with ssl)")
        }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        if process.isRunning { process.terminate() }
    }
}
