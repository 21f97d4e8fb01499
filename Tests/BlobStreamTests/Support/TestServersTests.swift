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

    // MARK: TLS

    @Test func nginxAnswersOverTLSOnlyToAClientTrustingTheTestCA() async throws {
        try TestServers.requireNginx()
        try TestServers.requireTLS()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "test-servers-tls")
        defer { TempFiles.remove(directory) }
        let path = directory + "/digits.txt"
        try Data(String(repeating: "0123456789", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        let url = try TestServers.nginxTLSURL(forFileAtPath: path).absoluteString
        #expect(url.hasPrefix("https://127.0.0.1:18443/"))

        let trusted = try await curl(["-r", "15-24", url])
        #expect(trusted.status == 0, "\(trusted.standardError)")
        #expect(trusted.standardOutput == "5678901234")

        let untrusted = try await curl([url], trustingTestCA: false)
        #expect(untrusted.status == 60)
        #expect(untrusted.standardError.contains("unable to get local issuer certificate"), "\(untrusted.standardError)")

        // A redirect from the TLS server stays on TLS.
        let redirect = try await curl(
            ["-X", "PUT", "--data", "x", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}",
             TestServers.redirectPutTLSURL.absoluteString + "a/b"])
        #expect(redirect.standardOutput == "307 https://127.0.0.1:18443/upload/a/b", "\(redirect.standardError)")
    }

    @Test func untrustedTLSPeersAreRefusedForTheirReasons() async throws {
        try TestServers.requireTLS()
        for peer in TestServers.UntrustedTLSPeer.allCases {
            try TestServers.require("nginx's TLS peer \(peer)", port: peer.port, url: peer.url.absoluteString)
            let result = try await curl(["--tlsv1.2", "-o", "/dev/null", peer.url.absoluteString])
            let reason = switch peer {
            case .wrongName: "no alternative certificate subject name matches target host name '127.0.0.1'"
            case .selfSigned: "self-signed certificate"
            case .expired: "certificate has expired"
            case .legacyProtocol: "protocol version"
            }
            #expect(result.status != 0, "\(peer)")
            #expect(result.standardError.contains(reason), "\(peer): \(result.standardError)")
        }

        // What is wrong with those two is only the name, and only the protocol version.
        let named = try await curl(
            ["--resolve", "wrong.example:18444:127.0.0.1", "-o", "/dev/null", "-w", "%{http_code}",
             "https://wrong.example:18444/_blobstream/health"])
        #expect(named.standardOutput == "200", "\(named.standardError)")
        let legacy = try await curl(
            ["--tlsv1.1", "--tls-max", "1.1", "--ciphers", "DEFAULT:@SECLEVEL=0", "-o", "/dev/null",
             "-w", "%{http_code}", TestServers.UntrustedTLSPeer.legacyProtocol.url.absoluteString + "_blobstream/health"])
        #expect(legacy.standardOutput == "200", "\(legacy.standardError)")
    }

    @Test func tusAndMotoAnswerBehindTLS() async throws {
        try TestServers.requireTLS()
        try TestServers.requireTus()
        try TestServers.requireMoto()

        let options = try await curl(["-X", "OPTIONS", "-D", "-", "-o", "/dev/null", TestServers.tusTLSFilesURL.absoluteString])
        #expect(options.standardOutput.lowercased().contains("tus-resumable: 1.0.0"), "\(options.standardError)")

        let created = try await curl(
            ["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", "-D", "-", "-o", "/dev/null",
             TestServers.tusTLSFilesURL.absoluteString])
        let location = created.standardOutput.split(whereSeparator: \.isNewline)
            .first { $0.lowercased().hasPrefix("location:") }
            .map { $0.dropFirst("location:".count).trimmingCharacters(in: .whitespaces) }
        let upload = try #require(location.flatMap(URL.init(string:)), "\(created.standardOutput)\(created.standardError)")
        defer { TestServers.removeUploads([upload]) }
        #expect(upload.absoluteString.hasPrefix("https://127.0.0.1:18490/files/"))
        #expect(FileManager.default.fileExists(atPath: TestServers.tusDataPath(forUpload: upload)))

        let buckets = try await curl([TestServers.motoTLSURL.absoluteString + "/"])
        #expect(buckets.standardOutput.contains("ListAllMyBucketsResult"), "\(buckets.standardError)")
    }

    /// curl (installed by `Scripts/test-servers.sh up`) trusting only the test CA, or, when
    /// `trustingTestCA` is false, only the system's trust store.
    private func curl(_ arguments: [String], trustingTestCA: Bool = true) async throws -> ToolProcess.Result {
        let trust = trustingTestCA ? ["--cacert", TestServers.tlsCAPath] : []
        return try await ToolProcess.execute(
            URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-sS", "--max-time", "20"] + trust + arguments)
    }
}
