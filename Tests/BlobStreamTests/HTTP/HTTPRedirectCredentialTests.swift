import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Caller headers go with every request, but credentials never follow a redirect to another
/// origin.
@Suite struct HTTPRedirectCredentialTests {
    /// A redirect goes where its `Location` says, trailing slash included: FoundationNetworking
    /// builds the next request from the target's path, which drops it (`/v2/blob/` became
    /// `/v2/blob`, another resource).
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aRedirectKeepsItsTrailingSlash(transport: HTTPDataSource.Transport) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 20_000, seed: 32)
        let server = try ScriptedHTTPServer { request in
            switch request.target {
            case "/blob": return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "/v2/blob/"])
            case "/v2/blob/":
                return ScriptedHTTPServer.response(
                    status: "206 Partial Content", fields: ["Content-Range": "bytes 0-19999/20000", "ETag": "\"e2\""], body: bytes)
            default: return ScriptedHTTPServer.response(status: "404 Not Found")
            }
        }
        defer { server.stop() }
        let port = server.port
        let read = try await blocking {
            let source = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/blob")!, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }
        #expect(read == bytes)
        #expect(server.parsedRequests.map(\.target) == ["/blob", "/v2/blob/"])
    }

    /// Both transports stop a redirect loop by the same rule (URLSession never follows
    /// a redirect by itself): a typed error naming the limit, after exactly that many redirects.
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aRedirectLoopEndsAtTheLimit(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { request in
            let hop = Int(request.target.dropFirst(2)) ?? 0
            return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "/r\(hop + 1)"])
        }
        defer { server.stop() }
        let port = server.port
        let failure = try await blocking { () -> BlobStreamError? in
            let source = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/r0")!, configuration: .init(transport: transport))
            defer { source.close() }
            switch try SourceReader(source: source).open() {
            case .success: return nil
            case .failure(let error): return error
            }
        }
        guard case .network(_, let reason)? = failure else {
            Issue.record("expected a network error, got \(String(describing: failure))")
            return
        }
        #expect(reason.contains("more than 16 redirects"), "\(reason)")
        #expect(server.parsedRequests.map(\.target) == (0...16).map { "/r\($0)" })
    }

    /// A redirect to another scheme is refused on both transports, naming it.
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aRedirectToAnotherSchemeIsRefused(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "301 Moved Permanently", fields: ["Location": "ftp://127.0.0.1/blob"])
        }
        defer { server.stop() }
        let port = server.port
        let failure = try await blocking { () -> BlobStreamError? in
            let source = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/blob")!, configuration: .init(transport: transport))
            defer { source.close() }
            if case .failure(let error) = try SourceReader(source: source).open() { return error }
            return nil
        }
        guard case .unsupportedURL(let url, let reason)? = failure else {
            Issue.record("expected unsupportedURL, got \(String(describing: failure))")
            return
        }
        #expect(url == "ftp://127.0.0.1/blob")
        #expect(reason.contains("301") && reason.contains("a scheme other than http and https"), "\(reason)")
    }

    /// A failure after a redirect names where the request went, not only the URL given, and
    /// leaves out the target's query, which may be a signature.
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aFailureAfterARedirectNamesItsTarget(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { request in
            if request.target == "/blob" {
                return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "/signed/blob?signature=SECRET"])
            }
            // Half the body, then the connection closes.
            return Array(ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes 0-999/1000"],
                body: [UInt8](repeating: 7, count: 1000)).dropLast(500))
        }
        defer { server.stop() }
        let port = server.port
        let configuration = HTTPDataSource.Configuration(maxRetries: 0, transport: transport)
        let outcome = try await blocking { () -> BlobSourceReadResult in
            let source = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/blob")!, configuration: configuration)
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readUntilStopped().outcome
        }
        guard case .failed(.network(let resource, let reason)) = outcome else {
            Issue.record("expected a network error, got \(outcome)")
            return
        }
        #expect(resource == "http://127.0.0.1:\(port)/blob")
        #expect(reason.hasSuffix("at offset 500, redirected to http://127.0.0.1:\(port)/signed/blob"), "\(reason)")
        #expect(!reason.contains("SECRET"), "\(reason)")
    }

    /// A status from the redirect's target (an expired signed link's 403) names that target too,
    /// without its signature: the URL asked for answered only the redirect.
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aStatusAfterARedirectNamesItsTarget(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { request in
            if request.target == "/blob" {
                return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "/signed/blob?signature=SECRET"])
            }
            return ScriptedHTTPServer.response(
                status: "403 Forbidden", fields: ["Content-Type": "text/plain"], body: Array("Request has expired".utf8))
        }
        defer { server.stop() }
        let port = server.port
        let configuration = HTTPDataSource.Configuration(maxRetries: 0, transport: transport)
        let outcome = try await blocking { () -> Result<BlobSourceDescription, BlobStreamError> in
            let source = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/blob")!, configuration: configuration)
            defer { source.close() }
            return try SourceReader(source: source).open()
        }
        guard case .failure(.httpStatus(let url, 403, let message)) = outcome else {
            Issue.record("expected a 403, got \(outcome)")
            return
        }
        #expect(url == "http://127.0.0.1:\(port)/blob, redirected to http://127.0.0.1:\(port)/signed/blob", "\(url)")
        #expect(message == "Request has expired")
        #expect(!"\(BlobStreamError.httpStatus(url: url, statusCode: 403, message: message))".contains("SECRET"))
    }

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

        let atOrigin = origin.parsedRequests
        #expect(atOrigin.map(\.target) == ["/here", "/blob", "/away"])
        #expect(atOrigin.allSatisfy { $0.fields["authorization"] == "Bearer secret" && $0.fields["x-trace"] == "t1" })
        let elsewhere = other.parsedRequests
        #expect(elsewhere.map(\.target) == ["/blob"])
        #expect(elsewhere.first?.fields["authorization"] == nil, "the credential did not leave its origin")
        #expect(elsewhere.first?.fields["x-trace"] == "t1", "other headers follow the redirect")
        #expect(elsewhere.first?.fields["range"]?.hasPrefix("bytes=0-") == true)
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func noCredentialFollowsARedirectToAnotherPort(transport: HTTPDataSource.Transport) async throws {
        // Same scheme and host, another port: another origin. Every credential field stays
        // behind, on the first request and on every reconnect or seek after it.
        let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 32)
        let other = try ScriptedHTTPServer { request in
            let (first, last) = HTTPVersionPinTests.range(of: request, count: bytes.count)
            return ScriptedHTTPServer.response(
                status: "206 Partial Content",
                fields: ["Content-Range": "bytes \(first)-\(last)/\(bytes.count)", "ETag": "\"e2\""], body: Array(bytes[first...last]))
        }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "307 Temporary Redirect", fields: ["Location": "http://127.0.0.1:\(other.port)/blob"])
        }
        defer { origin.stop() }
        let headers = ["Authorization": "Bearer secret", "Proxy-Authorization": "Basic cHJveHk=", "Cookie": "session=s1",
                       "X-Api-Key": "k1", "X-Trace": "t2"]
        let url = URL(string: "http://127.0.0.1:\(origin.port)/blob")!
        let (head, tail) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(headers: headers, credentialHeaders: ["x-API-key"], readAheadLimit: 16 * 1024, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return (try reader.read(at: 0, count: 1000), try reader.readToEnd(from: 60_000).get())
        }
        #expect(head == .read(1000))
        #expect(tail == Array(bytes[60_000...]))
        #expect(origin.parsedRequests.count >= 2)
        #expect(origin.parsedRequests.allSatisfy { $0.fields["authorization"] == "Bearer secret" && $0.fields["cookie"] == "session=s1" && $0.fields["x-api-key"] == "k1" })
        let elsewhere = other.parsedRequests
        #expect(elsewhere.count >= 2)
        for request in elsewhere {
            #expect(request.fields["authorization"] == nil)
            #expect(request.fields["proxy-authorization"] == nil)
            #expect(request.fields["cookie"] == nil)
            #expect(request.fields["x-api-key"] == nil, "a field the caller marked as a credential")
            #expect(request.fields["x-trace"] == "t2")
        }
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func credentialsDroppedOnARedirectStayDroppedWhenItComesBack(transport: HTTPDataSource.Transport) async throws {
        // origin /start -> other /bounce -> origin /blob: the other origin chose the last hop, so
        // the credential it made the source drop is not restored by it.
        let bytes = TempFiles.pseudoRandomBytes(count: 20_000, seed: 33)
        let ports = Locked<Int>(0)
        let other = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "http://127.0.0.1:\(ports.value)/blob"])
        }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer { request in
            guard request.target == "/blob" else {
                return ScriptedHTTPServer.response(status: "302 Found", fields: ["Location": "http://127.0.0.1:\(other.port)/bounce"])
            }
            return ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes 0-19999/20000", "ETag": "\"e3\""], body: bytes)
        }
        defer { origin.stop() }
        ports.value = Int(origin.port)
        let url = URL(string: "http://127.0.0.1:\(origin.port)/start")!
        let read = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(headers: ["Authorization": "Bearer secret"], transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }
        #expect(read == bytes)
        #expect(origin.parsedRequests.map(\.target) == ["/start", "/blob"])
        #expect(origin.parsedRequests.first?.fields["authorization"] == "Bearer secret")
        #expect(other.parsedRequests.first?.fields["authorization"] == nil)
        #expect(origin.parsedRequests.last?.fields["authorization"] == nil, "not restored by a hop the other origin chose")
    }
}
