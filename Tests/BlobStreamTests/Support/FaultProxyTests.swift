import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The fault proxy against real nginx: what it forwards is byte-identical, and its faults hit
/// exactly the planned connection at exactly the planned byte.
@Suite struct FaultProxyTests {
    private static let size = 3 * 1024 * 1024 + 17

    /// A pseudo-random file served by nginx; the caller removes `directory`.
    private func publish(seed: UInt64) throws -> (directory: String, path: String, url: URL) {
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "fault-proxy")
        let path = directory + "/blob.bin"
        return try TempFiles.removing(directory) {
            try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: seed)
            return (directory, path, try TestServers.nginxURL(forFileAtPath: path))
        }
    }

    /// One request on a session of its own, so every request opens a new connection.
    private func perform(_ request: URLRequest, body: Data? = nil, timeout: TimeInterval = 30) async throws
        -> (data: Data, status: Int)
    {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (data, response) =
            if let body { try await session.upload(for: request, from: body) } else { try await session.data(for: request) }
        return (data, (response as? HTTPURLResponse)?.statusCode ?? -1)
    }

    @Test func forwardsEveryByteUnchanged() async throws {
        try TestServers.requireNginx()
        let file = try publish(seed: 1)
        defer { TempFiles.remove(file.directory) }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }

        let reply = try await perform(URLRequest(url: proxy.url(for: file.url)))

        #expect(reply.status == 200)
        #expect(reply.data.count == Self.size)
        #expect(try TempFiles.sha256(of: reply.data) == TempFiles.sha256(ofFileAtPath: file.path))
        #expect(Array(reply.data.suffix(1000)) == TempFiles.pseudoRandomBytes(count: 1000, seed: 1, from: Self.size - 1000))
        let statistics = proxy.statistics
        #expect(statistics.connections == 1)
        #expect(statistics.requestBytes > 0)
        #expect(statistics.responseBytes > Self.size)
        #expect(statistics.cuts == 0 && statistics.stalls == 0)
    }

    @Test func cutsThePlannedConnectionAtTheByteAndPassesTheNext() async throws {
        try TestServers.requireNginx()
        let file = try publish(seed: 2)
        defer { TempFiles.remove(file.directory) }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.cutAfter(bytes: [100_000])
        let url = proxy.url(for: file.url)

        let cut = try? await perform(URLRequest(url: url))
        #expect(cut == nil || cut!.data.count < Self.size, "a cut response must not arrive whole")
        #expect(proxy.statistics.responseBytes == 100_000)
        #expect(proxy.statistics.cuts == 1)

        let whole = try await perform(URLRequest(url: url))
        #expect(whole.status == 200)
        #expect(try TempFiles.sha256(of: whole.data) == TempFiles.sha256(ofFileAtPath: file.path))
        #expect(proxy.statistics.connections == 2)
        #expect(proxy.statistics.cuts == 1)
    }

    @Test func followsThePlanInOrderOfConnections() async throws {
        try TestServers.requireNginx()
        let file = try publish(seed: 3)
        defer { TempFiles.remove(file.directory) }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.plan([.none, .cut(after: 0, direction: .response)])
        let url = proxy.url(for: file.url)

        let first = try await perform(URLRequest(url: url))
        let second = try? await perform(URLRequest(url: url))

        #expect(first.data.count == Self.size)
        #expect(second == nil || second!.data.isEmpty, "nothing of the second response may pass")
        #expect(proxy.statistics.connections == 2)
        #expect(proxy.statistics.cuts == 1)
    }

    @Test func cutsAnUploadMidBodyAndNginxKeepsNoPartialFile() async throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.uploadRoot, prefix: "fault-proxy")
        defer { TempFiles.remove(directory) }
        let body = Data(TempFiles.pseudoRandomBytes(count: 2 * 1024 * 1024, seed: 4))
        let target = directory + "/put.bin"
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.plan([.cut(after: 300_000, direction: .request)])
        var request = URLRequest(url: proxy.url(for: try TestServers.nginxURL(forFileAtPath: target)))
        request.httpMethod = "PUT"

        await #expect(throws: (any Error).self) { _ = try await perform(request, body: body) }
        #expect(proxy.statistics.requestBytes == 300_000)
        #expect(!FileManager.default.fileExists(atPath: target))

        let retried = try await perform(request, body: body)
        #expect(retried.status == 201)
        #expect(FileManager.default.contents(atPath: target) == body)
    }

    @Test func stallsAResponseUntilTheClientGivesUp() async throws {
        try TestServers.requireNginx()
        let file = try publish(seed: 5)
        defer { TempFiles.remove(file.directory) }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.plan([.stall(after: 50_000, direction: .response)])

        await #expect(throws: URLError.self) {
            _ = try await perform(URLRequest(url: proxy.url(for: file.url)), timeout: 1)
        }
        #expect(proxy.statistics.stalls == 1)
        #expect(proxy.statistics.responseBytes == 50_000)
    }

    @Test func refusesConnectionsOnceStopped() async throws {
        try TestServers.requireNginx()
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        let url = proxy.url(for: TestServers.nginxURL)
        proxy.stop()

        await #expect(throws: URLError.self) { _ = try await perform(URLRequest(url: url), timeout: 5) }
        #expect(proxy.statistics.connections == 0)
    }
}
