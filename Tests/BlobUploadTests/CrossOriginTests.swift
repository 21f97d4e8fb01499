import BlobStream
@testable import BlobUpload
import Foundation
import HTTP1
import BlobTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// No request of the package goes to an origin (scheme, host, port) other than the one the
/// caller named, so the caller's header fields — credentials among them — never leave it.
/// The other origin is a scripted server on another port that records what reaches it.
@Suite struct CrossOriginTests {
    private static let credentials = ["Authorization": "Bearer secret", "Cookie": "session=1", "X-Api-Key": "k"]

    /// A server that would accept a whole tus upload and records every request.
    private func otherOrigin() throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/b"), ScriptedTus.head(offset: 0, length: 3000),
            ScriptedTus.patched(1000), ScriptedTus.patched(2000), ScriptedTus.patched(3000),
        ]], address: .random())
    }

    private func isRefusal(_ error: any Error, to other: ScriptedHTTPServer) -> Bool {
        guard case .crossOriginRefused(_, let url, let allowedOrigin)? = error as? BlobUploadError else { return false }
        return url.contains(":\(other.port)/") && !allowedOrigin.contains(":\(other.port)")
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aLocationOnAnotherOriginIsRefused(transport: TusClient.Transport) async throws {
        let other = try otherOrigin()
        let endpoint = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created(other.url("/files/b").absoluteString),
        ]])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials, transport: transport)
        let log = EventLog<TusUploadEvent>()
        await #expect {
            _ = try await client.upload(ScriptedTus.source(3000), options: ScriptedTus.options(chunkSize: 1000)) {
                log.append($0)
            }
        } throws: { isRefusal($0, to: other) }
        #expect(!other.wasReached)
        #expect(log.createdURLs.isEmpty)
    }

    @Test func aLocationWithAnotherSchemeIsRefused() async throws {
        let endpoint = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("https://127.0.0.1/files/b"),
        ]])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials)
        await #expect {
            _ = try await client.upload(ScriptedTus.source(3000), options: ScriptedTus.options(chunkSize: 1000))
        } throws: { error in
            guard case .crossOriginRefused(_, let url, _)? = error as? BlobUploadError else { return false }
            return url.hasPrefix("https:")
        }
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func resumingAnUploadOnAnotherOriginIsRefused(transport: TusClient.Transport) async throws {
        let other = try otherOrigin()
        let endpoint = try ScriptedHTTPServer(connections: [[ScriptedTus.options]])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials, transport: transport)
        await #expect {
            _ = try await client.upload(
                ScriptedTus.source(3000), resuming: other.url("/files/b"),
                options: ScriptedTus.options(chunkSize: 1000))
        } throws: { isRefusal($0, to: other) }
        #expect(!other.wasReached)
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func statusAndTerminationOfAnotherOriginAreRefused(transport: TusClient.Transport) async throws {
        let other = try otherOrigin()
        let endpoint = try ScriptedHTTPServer(connections: [])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials, transport: transport)
        let foreign = other.url("/files/b")
        await #expect { _ = try await client.status(of: foreign) } throws: { isRefusal($0, to: other) }
        await #expect { try await client.terminate(foreign) } throws: { isRefusal($0, to: other) }
        #expect(!other.wasReached)
    }

    /// URLSession follows redirects of requests without a body by itself; one that leaves the
    /// origin must not carry the caller's header fields there.
    @Test func aRedirectToAnotherOriginIsNotFollowed() async throws {
        let other = try otherOrigin()
        let foreign = other.url("/files/b").absoluteString
        let endpoint = try ScriptedHTTPServer(connections: [
            [ScriptedTus.redirect(foreign)], [ScriptedTus.redirect(foreign)], [ScriptedTus.redirect(foreign)],
            [ScriptedTus.redirect(foreign)],
        ])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials, transport: .urlSession)
        let upload = ScriptedTus.endpoint(endpoint).appendingPathComponent("a")
        await #expect { _ = try await client.discover() } throws: { isRefusal($0, to: other) }
        await #expect { _ = try await client.status(of: upload) } throws: { isRefusal($0, to: other) }
        await #expect { try await client.terminate(upload) } throws: { isRefusal($0, to: other) }
        await #expect {
            _ = try await client.create(length: 10, metadata: ["filename": "x"])
        } throws: { isRefusal($0, to: other) }
        #expect(!other.wasReached)
    }

    /// The streamed PUT: a redirect is refused whatever its target, and nothing reaches it.
    @Test func aStreamedPutIsNotRedirectedToAnotherOrigin() async throws {
        let other = try otherOrigin()
        let endpoint = try ScriptedHTTPServer(
            connections: [[ScriptedTus.redirect(other.url("/upload/x").absoluteString)]], drainBeforeClosing: true)
        let target = URL(string: "http://127.0.0.1:\(endpoint.port)/upload/x")!
        await #expect {
            _ = try await StreamedUploader().upload(
                InputStream(data: Data("body".utf8)), to: target, headers: Self.credentials, expectedLength: 4)
        } throws: { error in
            switch error as? BlobUploadError {
            case .redirectRefused?, .crossOriginRefused?: return true
            default: return false
            }
        }
        #expect(!other.wasReached)
    }

    @Test func originsCompareSchemeHostAndEffectivePort() {
        let endpoint = URL(string: "http://Example.com/files/")!
        #expect(URLOrigin(URL(string: "http://example.com:80/files/1")!) == URLOrigin(endpoint))
        #expect(URLOrigin(URL(string: "/files/1", relativeTo: endpoint)!.absoluteURL) == URLOrigin(endpoint))
        #expect(URLOrigin(URL(string: "https://example.com/files/1")!) != URLOrigin(endpoint))
        #expect(URLOrigin(URL(string: "http://example.com:8080/files/1")!) != URLOrigin(endpoint))
        #expect(URLOrigin(URL(string: "http://example.org/files/1")!) != URLOrigin(endpoint))
        #expect(URLOrigin(URL(string: "http://user@example.com.evil/files/1")!) != URLOrigin(endpoint))
    }
}
