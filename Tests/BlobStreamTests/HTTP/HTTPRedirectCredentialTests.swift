import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Caller headers go with every request, but credentials never follow a redirect to another
/// origin.
@Suite struct HTTPRedirectCredentialTests {
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func authorizationStaysWithItsOrigin(transport: HTTPDataSource.Transport) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 50_000, seed: 31)
        let body = { @Sendable (request: ScriptedHTTPServer.Request) -> [UInt8] in
            ScriptedHTTPServer.response(
                status: "206 Partial Content",
                fields: ["Content-Range": "bytes 0-49999/50000", "ETag": "\"e1\""], body: bytes)
        }
        let other = try ScriptedHTTPServer { body($0) }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer { request in
            switch request.target {
            case "/away": return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "http://localhost:\(other.port)/blob"])
            case "/here": return ScriptedHTTPServer.response(status: "307 Temporary Redirect", fields: ["Location": "/blob"])
            default: return body(request)
            }
        }
        defer { origin.stop() }
        let headers = ["Authorization": "Bearer secret", "X-Trace": "t1"]

        let originPort = origin.port
        let results = try await blocking {
            try ["/here", "/away"].map { path in
                let source = HTTPDataSource(
                    url: URL(string: "http://127.0.0.1:\(originPort)\(path)")!,
                    configuration: .init(headers: headers, transport: transport))
                defer { source.close() }
                let reader = SourceReader(source: source)
                _ = try reader.open().get()
                return try reader.readToEnd().get()
            }
        }
        #expect(results == [bytes, bytes], "read through both redirects")

        let atOrigin = origin.requests
        #expect(atOrigin.map(\.target) == ["/here", "/blob", "/away"])
        #expect(atOrigin.allSatisfy { $0.fields["authorization"] == "Bearer secret" && $0.fields["x-trace"] == "t1" })
        let elsewhere = other.requests
        #expect(elsewhere.map(\.target) == ["/blob"])
        #expect(elsewhere.first?.fields["authorization"] == nil, "the credential did not leave its origin")
        #expect(elsewhere.first?.fields["x-trace"] == "t1", "other headers follow the redirect")
        #expect(elsewhere.first?.fields["range"]?.hasPrefix("bytes=0-") == true)
    }
}
