import Foundation
import Glibc
import SystemCalls

/// A private tus server (the same Scripts/tus_server.py that `Scripts/test-servers.sh` runs)
/// on its own ephemeral port and data directory, for tests that restart or kill the server:
/// doing that to the shared servers would break every other test using them at the time.
///
/// Needs the Python packages that `Scripts/test-servers.sh up` installs. Call ``stop()``
/// when done (deinit does it too); it also removes the data directory.
public final class TusServerProcess: Sendable {
    /// The port on 127.0.0.1, kept across restarts.
    public var port: UInt16 { chosenPort.withLock { $0 } }
    /// 0 until the first launch: uvicorn binds an ephemeral port itself and names it in its
    /// log, so no other server of the run can take the port between choosing and binding it.
    private let chosenPort = LockedValue<UInt16>(0)
    /// Whether the checksum-verifying middleware wraps the app (as on port 18091).
    public let verifiesChecksums: Bool
    /// When set, every request needs a bearer token from `GET /token`, good for this many
    /// requests (Scripts/tus_token_middleware.py).
    public let tokenUses: Int?
    /// Where uploads are stored: bytes in `<id>`, state in `<id>.info`.
    public let dataDirectory: String
    private let process = LockedValue<Process?>(nil)

    /// The creation endpoint, `http://127.0.0.1:<port>/files/`.
    public var filesURL: URL { URL(string: "http://127.0.0.1:\(port)/files/")! }

    /// Starts the server and waits (up to 30 s) until it accepts connections.
    public init(verifiesChecksums: Bool = false, tokenUses: Int? = nil) throws {
        self.verifiesChecksums = verifiesChecksums
        self.tokenUses = tokenUses
        dataDirectory = try TempFiles.makeDirectory(prefix: "tus-data")
        do {
            try launch()
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    /// ``init(verifiesChecksums:)`` on a thread of its own: starting the Python server takes a
    /// second or more, which must not hold a thread of Swift's cooperative pool (two on CI)
    /// that every other test is waiting for.
    public static func start(verifiesChecksums: Bool = false, tokenUses: Int? = nil) async throws -> TusServerProcess {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try TusServerProcess(verifiesChecksums: verifiesChecksums, tokenUses: tokenUses) })
            }
        }
    }

    /// Stops the server gracefully (SIGTERM: in-flight requests get a second to finish) and
    /// starts it again on the same port with the same uploads.
    public func restart() throws {
        terminate(signal: SIGTERM)
        try launch()
    }

    /// Kills the server abruptly (SIGKILL, like a crash) and starts it again on the same port
    /// with the same uploads. Bytes of a PATCH that were never acknowledged are dropped on
    /// restart, as a crash-safe server would.
    public func crashAndRestart() throws {
        terminate(signal: SIGKILL)
        try launch()
    }

    /// ``restart()`` on a thread of its own, for a test's task (see ``start(verifiesChecksums:)``).
    public func restartOffThePool() async throws {
        try await Self.onItsOwnThread { try self.restart() }
    }

    /// ``crashAndRestart()`` on a thread of its own, for a test's task.
    public func crashAndRestartOffThePool() async throws {
        try await Self.onItsOwnThread { try self.crashAndRestart() }
    }

    private static func onItsOwnThread(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Stops the server and removes its data directory and log. Calling it again does
    /// nothing more.
    public func stop() {
        terminate(signal: SIGTERM)
        TempFiles.remove(dataDirectory)
        TempFiles.remove(dataDirectory + ".log")
    }

    /// Starts the server and waits until it accepts connections. A server restarted on its old
    /// port can lose the race for it (the one before may still hold it for a moment, on a
    /// loaded machine), and exits at once: it is started again, up to three times in all.
    private func launch() throws {
        var attempt = 1
        while true {
            do {
                return try launchOnce()
            } catch let failure as LaunchFailure where failure.exitedEarly && attempt < 3 {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.5)
            } catch let failure as LaunchFailure {
                throw failure.error
            }
        }
    }

    private struct LaunchFailure: Error {
        var exitedEarly: Bool
        var error: TestSupportError
    }

    private func launchOnce() throws {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Scripts/tus_server.py").path
        let log = dataDirectory + ".log"
        guard FileManager.default.createFile(atPath: log, contents: nil) else {
            throw TestSupportError("cannot create \(log)")
        }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? output.close() }
        let started = Process()
        started.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        started.arguments = ["python3", script, "--port", String(port), "--repair",
                             "--exit-with", String(ProcessInfo.processInfo.processIdentifier),
                             "--pid-file", dataDirectory + ".pid", "--data-dir", dataDirectory]
            + (verifiesChecksums ? ["--checksum"] : [])
            + (tokenUses.map { ["--expiring-tokens", String($0)] } ?? [])
        started.standardInput = FileHandle.nullDevice
        started.standardOutput = output
        started.standardError = output
        try started.run()
        process.withLock { $0 = started }

        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if port == 0, let bound = Self.boundPort(inLog: log) { chosenPort.withLock { $0 = bound } }
            if port != 0, case .success(let fd) = LoopbackSocket.connect(port: port, timeout: 1) {
                close(fd)
                return
            }
            guard started.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let printed = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw LaunchFailure(exitedEarly: !started.isRunning, error: TestSupportError(
            "the private tus server on port \(port) did not start: \(printed.suffix(2000)) "
                + "(\(TestServers.instructions))"))
    }

    /// The port uvicorn says it listens on ("Uvicorn running on http://127.0.0.1:PORT").
    private static func boundPort(inLog log: String) -> UInt16? {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8),
              let range = text.range(of: "Uvicorn running on http://127.0.0.1:") else { return nil }
        return UInt16(text[range.upperBound...].prefix { $0.isNumber })
    }

    private func terminate(signal: Int32) {
        process.withLock { process in
            guard let running = process else { return }
            if running.isRunning {
                let pid = running.processIdentifier
                kill(pid, signal)
                // A server that does not go within 10 s is killed.
                if ChildExit.wait(for: running, seconds: 10) == nil {
                    kill(pid, SIGKILL)
                    _ = ChildExit.wait(for: running, seconds: 5)
                }
            }
            process = nil
        }
        try? FileManager.default.removeItem(atPath: dataDirectory + ".pid")
    }
}
