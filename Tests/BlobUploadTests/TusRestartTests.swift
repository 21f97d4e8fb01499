import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SystemCalls
import Testing

/// The tus server goes away mid-upload: restarted between chunks, or killed in the middle of
/// a PATCH. Each test runs its own server (``TusServerProcess``) so the shared ones stay up.
@Suite struct TusRestartTests {
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func survivesAServerRestartBetweenChunks(transport: TusClient.Transport) async throws {
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let chunk = 512 * 1024
        let size = 5 * chunk + 99
        let path = try makeRandomFile(size: size, seed: 21)
        defer { TempFiles.remove(path) }
        var options = TusUploadOptions()
        options.chunkSize = chunk
        options.retry.initialDelay = 0.1
        let restarted = LockedValue(false)
        let restartFailure = LockedValue<String?>(nil)
        options.chunkBodyHook = { offset, body in
            if offset == Int64(2 * chunk), !restarted.withLock({ $0 }) {
                restarted.withLock { $0 = true }
                do {
                    try await onPlainThread { try server.restart() }
                } catch {
                    restartFailure.withLock { $0 = "\(error)" }
                }
            }
            return body
        }
        let result = try await TusClient(endpoint: server.filesURL, transport: transport).upload(.file(path: path), options: options)
        #expect(restartFailure.withLock { $0 } == nil, "the test's server did not come back")
        #expect(restarted.withLock { $0 })
        #expect(result.length == Int64(size))
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path, dataRoot: server.dataDirectory))
    }

    /// The PATCH body stalls halfway (the proxy stops forwarding it) and the server is killed
    /// meanwhile. The client times out, finds the restarted server by HEAD, and goes on from
    /// the offset the server acknowledged.
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func survivesAServerKilledMidPatch(transport: TusClient.Transport) async throws {
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let proxy = try FaultProxy(targetPort: server.port)
        defer { proxy.stop() }
        let chunk = 512 * 1024
        let size = 5 * chunk
        let path = try makeRandomFile(size: size, seed: 22)
        defer { TempFiles.remove(path) }
        proxy.plan([.stall(after: 2 * chunk + chunk / 2, direction: .request)])
        let killer = Task.detached {
            while proxy.statistics.stalls == 0 {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            try await server.crashAndRestartOffThePool()
        }
        defer { killer.cancel() }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 2
        let client = TusClient(endpoint: proxy.url(for: server.filesURL), transport: transport, configuration: configuration)
        var options = TusUploadOptions()
        options.chunkSize = chunk
        options.retry.initialDelay = 0.2
        // Attempts for a minute or two: on a loaded machine the restarted server's Python can
        // take longer to listen again than the default eight attempts (about 20 s) wait.
        options.retry.maxAttempts = 20
        let log = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        try await killer.value
        #expect(proxy.statistics.stalls == 1)
        #expect(!log.retriedErrors.isEmpty)
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path, dataRoot: server.dataDirectory))
    }
}

/// Runs blocking work (starting a server process) on a plain thread, not one of Swift's
/// few cooperative threads.
func onPlainThread(_ work: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, Error>) in
        Thread.detachNewThread {
            continuation.resume(with: Result { try work() })
        }
    }
}
