import Foundation
import SystemCalls

/// The loopback servers the HTTP and upload scenarios measure against, started through the
/// same script the tests use, so `swift run -c release blob-bench` stays one command.
enum LoopbackServers {
    /// Runs `Scripts/test-servers.sh up` (it installs nginx and tuspyserver when missing), found
    /// above this source file or the current directory.
    static func start() throws {
        let starts = [URL(fileURLWithPath: #filePath).deletingLastPathComponent(),
                      URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var script: String?
        for start in starts where script == nil {
            var directory = start
            while directory.path != "/" && script == nil {
                let candidate = directory.appendingPathComponent("Scripts/test-servers.sh").path
                if FileManager.default.fileExists(atPath: candidate) { script = candidate }
                directory.deleteLastPathComponent()
            }
        }
        guard let script else {
            throw BenchmarkError("cannot find Scripts/test-servers.sh above \(#filePath) or the current directory")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "up"]
        try process.run()
        let ended = ChildExit.waitForever(process)
        guard ended == .success else {
            throw BenchmarkError("\(script) up exited with \(ended.code); see its messages above")
        }
        try ensureCurl()
    }

    /// curl is a baseline (downloads and `curl -T`); a bare Debian machine may lack it.
    private static func ensureCurl() throws {
        let install = Process()
        install.executableURL = URL(fileURLWithPath: "/bin/bash")
        install.arguments = ["-c", "command -v curl >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl; } >&2"]
        try install.run()
        guard ChildExit.waitForever(install) == .success else {
            throw BenchmarkError("curl is missing and could not be installed: apt-get install -y curl")
        }
    }

    /// Makes VmHWM start again from the current resident size (Linux `clear_refs` 5), so a peak
    /// measured afterwards belongs to the scenario that follows, not an earlier one.
    static func resetPeakResidentSize() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }
}
