@testable import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The servers from Scripts/test-servers.sh answer where TestServers says, and a missing one
/// fails with instructions.
@Suite struct TestServersTests {
    @Test func everyServerIsReachable() throws {
        try TestServers.requireNginx()
        try TestServers.requireStallServer()
        try TestServers.requireTus()
        try TestServers.requireChecksumTus()
    }

    @Test func aMissingServerFailsWithInstructions() throws {
        let down = try RefusingPort()

        let error = #expect(throws: TestSupportError.self) {
            try TestServers.require("the example server", port: down.port, url: "http://127.0.0.1:\(down.port)/")
        }
        #expect(error?.message.contains("the example server is not running at http://127.0.0.1:\(down.port)/") == true)
        #expect(error?.message.contains(TestServers.instructions) == true)
        #expect(TestServers.instructions.contains("Scripts/test-servers.sh up"))
    }

    @Test func filesUnderTheDocumentRootAreServedOnEveryRoute() async throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "test-servers")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 100_000, seed: 9)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }

        for route in TestServers.Route.allCases {
            var request = URLRequest(url: try TestServers.nginxURL(forFileAtPath: path, route: route))
            request.setValue("bytes=10-19", forHTTPHeaderField: "Range")
            let (data, response) = try await session.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            let honoursRange = route == .plain || route == .slow
            #expect(http.statusCode == (honoursRange ? 206 : 200), "route \(route)")
            #expect(Array(data) == TempFiles.pseudoRandomBytes(count: honoursRange ? 10 : 100_000, seed: 9, from: honoursRange ? 10 : 0))
            #expect((http.value(forHTTPHeaderField: "Content-Length") == nil) == (route == .chunked), "route \(route)")
        }
        #expect(throws: TestSupportError.self) { try TestServers.nginxURL(forFileAtPath: "/etc/passwd") }
    }

    @Test func theStallServerSendsItsBytesThenNothing() async throws {
        try TestServers.requireStallServer()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }

        for throughNginx in [true, false] {
            await #expect(throws: URLError.self) {
                _ = try await session.data(from: TestServers.stallURL(afterBytes: 1000, throughNginx: throughNginx))
            }
        }
        let (data, response) = try await session.data(from: TestServers.stallURL(afterBytes: 300, total: 300))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(Array(data) == (0..<300).map { UInt8($0 % 256) })
    }
}
