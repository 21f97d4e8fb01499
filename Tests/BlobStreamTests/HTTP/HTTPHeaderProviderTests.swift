import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// ``HTTPDataSource/Configuration/headerProvider``: asked before each request, once more
/// after a 401 or 403 (which is then sent again), and never for another origin.
@Suite struct HTTPHeaderProviderTests {
    static let bytes = TempFiles.pseudoRandomBytes(count: 40_000, seed: 41)

    /// Answers the blob to `Authorization: Bearer fresh` only, 401 otherwise.
    static func guarded(_ request: ScriptedHTTPServer.Request) -> [UInt8] {
        guard request.fields["authorization"] == "Bearer fresh" else {
            return ScriptedHTTPServer.response(status: "401 Unauthorized", fields: ["WWW-Authenticate": "Bearer"])
        }
        return ScriptedHTTPServer.response(
            status: "206 Partial Content", fields: ["Content-Range": "bytes 0-39999/40000", "ETag": "\"p1\""], body: bytes)
    }

    /// The one rule all three clients (HTTP source, tus, streamed PUT) follow.
    @Test func onlyAFirstTryRefusedWith401Or403IsRenewed() throws {
        let first = HeaderRequest(method: "PATCH", url: URL(string: "https://example.com/files/1")!)
        for status in [401, 403] {
            let renewal = try #require(first.renewal(after: status))
            #expect(renewal == HeaderRequest(method: "PATCH", url: first.url, refusedStatus: status))
            #expect(renewal.renewal(after: 401) == nil, "a second refusal is the answer")
        }
        for status in [200, 204, 400, 404, 407, 500] {
            #expect(first.renewal(after: status) == nil)
        }
    }

    @Test func aRefusedRequestIsSentAgainWithRenewedFields() async throws {
        let server = try ScriptedHTTPServer { Self.guarded($0) }
        defer { server.stop() }
        let asked = LockedValue<[HeaderRequest]>([])
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let configuration = HTTPDataSource.Configuration(headerProvider: { request in
            asked.withLock { $0.append(request) }
            return ["Authorization": request.refusedStatus == nil ? "Bearer stale" : "Bearer fresh"]
        })

        let read = try await blocking {
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }

        #expect(read == Self.bytes)
        #expect(asked.withLock { $0 } == [HeaderRequest(method: "GET", url: url), HeaderRequest(method: "GET", url: url, refusedStatus: 401)])
        #expect(server.parsedRequests.map { $0.fields["authorization"] } == ["Bearer stale", "Bearer fresh"])
    }

    @Test func aSecondRefusalFailsTheOpen() async throws {
        let server = try ScriptedHTTPServer { Self.guarded($0) }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let configuration = HTTPDataSource.Configuration(headerProvider: { _ in ["Authorization": "Bearer stale"] })

        let opened = try await blocking {
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            return try SourceReader(source: source).open()
        }

        guard case .failure(.httpStatus(_, 401, _)) = opened else {
            Issue.record("expected a 401 failure, got \(opened)")
            return
        }
        #expect(server.parsedRequests.count == 2, "sent once more, not again and again")
    }

    /// A provider that never answers (its token server is silent) holds a transfer no longer
    /// than the request's time-out: a typed time-out, and no request sent without its fields.
    @Test func aSilentProviderTimesOutTheRequest() async throws {
        let server = try ScriptedHTTPServer { Self.guarded($0) }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let configuration = HTTPDataSource.Configuration(requestTimeout: 0.5, maxRetries: 0, headerProvider: { _ in
            try? await Task.sleep(nanoseconds: 60_000_000_000)
            return ["Authorization": "Bearer late"]
        })
        let opened = try await blocking {
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            return try SourceReader(source: source).open()
        }
        guard case .failure(let error) = opened else {
            Issue.record("expected a time-out, got \(opened)")
            return
        }
        // Without the bound, the request went out after the provider's 60 s, and failed 401.
        #expect(error.description.contains("waiting for the header provider"), "\(error)")
        #expect(server.parsedRequests.isEmpty)
    }

    @Test func theProviderIsNotAskedForAnotherOrigin() async throws {
        let other = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes 0-39999/40000", "ETag": "\"p1\""], body: Self.bytes)
        }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "http://localhost:\(other.port)/blob"])
        }
        defer { origin.stop() }
        let asked = LockedValue<[URL]>([])
        let url = URL(string: "http://127.0.0.1:\(origin.port)/away")!
        let configuration = HTTPDataSource.Configuration(headerProvider: { request in
            asked.withLock { $0.append(request.url) }
            return ["X-Session": "s3cret"]
        })

        let read = try await blocking {
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }

        #expect(read == Self.bytes)
        #expect(asked.withLock { $0 } == [url])
        #expect(origin.parsedRequests.first?.fields["x-session"] == "s3cret")
        #expect(other.parsedRequests.allSatisfy { $0.fields["x-session"] == nil })
    }
}
