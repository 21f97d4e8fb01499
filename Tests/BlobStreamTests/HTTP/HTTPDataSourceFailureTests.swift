@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// HTTP errors, changed blobs, stalls and unreachable servers: each a typed error, never a hang
/// and never bytes of two versions.
@Suite struct HTTPDataSourceFailureTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    @Test(arguments: transports)
    func missingBlobIs404(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireNginx()
        let url = TestServers.nginxURL.appendingPathComponent("http-source-no-such-blob.bin")
        let (result, statistics) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            return (try SourceReader(source: source).open(), source.statistics)
        }
        #expect(result == .failure(.httpStatus(url: url.absoluteString, statusCode: 404)))
        #expect(statistics.requests == 1, "an HTTP error is not retried")
    }

    @Test(arguments: transports)
    func unsatisfiableRangeIs416ButTheExactEndIsTheEnd(transport: HTTPDataSource.Transport) async throws {
        // nginx always names its length, so a scripted server plays one that does not: the
        // reader learns where the blob ends only from a 416 at exactly that offset, and a 416
        // further on is an error.
        let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 9)
        let server = try ScriptedHTTPServer { request in
            let spec = (request.fields["range"] ?? "").dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            let first = Int(spec.first ?? "") ?? 0
            guard first < bytes.count else {
                return ScriptedHTTPServer.response(status: "416 Range Not Satisfiable", fields: ["Content-Range": "bytes */\(bytes.count)"])
            }
            let last = min(spec.count > 1 ? Int(spec[1]) ?? bytes.count - 1 : bytes.count - 1, bytes.count - 1)
            return ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes \(first)-\(last)/*", "ETag": "\"v1\""],
                body: Array(bytes[first...last]))
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let (description, whole, beyond) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 16 * 1024, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            let description = try reader.open().get()
            let whole = try reader.readToEnd().get()
            // A fresh source has read too little to know the length: the server says 416.
            let other = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 16 * 1024, transport: transport))
            defer { other.close() }
            let otherReader = SourceReader(source: other)
            _ = try otherReader.open().get()
            return (description, whole, try otherReader.read(at: 200_000, count: 10))
        }
        #expect(description.length == nil)
        #expect(whole == bytes)
        #expect(beyond == .failed(.httpStatus(url: url.absoluteString, statusCode: 416)))
        let unpinned = server.parsedRequests.filter { $0.fields["if-range"] == nil }
        #expect(unpinned.count == 2, "only each source's first request is unpinned")
        #expect(server.parsedRequests.allSatisfy { $0.fields["if-range"] == nil || $0.fields["if-range"] == "\"v1\"" })
    }

    @Test(arguments: transports)
    func aRangeFromTheFirstByteAnswered416IsAnEmptyBlob(transport: HTTPDataSource.Transport) async throws {
        // S3 (and moto) answer a range of an empty object with 416 and no Content-Range; a range
        // from byte 0 is unsatisfiable only for an empty representation (RFC 9110 §14.1.1).
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "416 Requested Range Not Satisfiable", fields: ["Content-Type": "application/xml"],
                                        body: Array("<Error><Code>InvalidRange</Code></Error>".utf8))
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/empty")!
        let (description, whole) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            return (try reader.open().get(), try reader.readToEnd().get())
        }
        #expect(description.length == 0)
        #expect(whole.isEmpty)
    }

    @Test(arguments: transports)
    func aRangeFromALaterByteAnswered416WithoutALengthStaysAnError(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "416 Requested Range Not Satisfiable", fields: [:])
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let opened = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            return try SourceReader(source: source).open(at: 10)
        }
        #expect(opened == .failure(.httpStatus(url: url.absoluteString, statusCode: 416)))
    }

    @Test func conflictingContentLengthsAreRefusedNotReadUntilClose() async throws {
        // "Content-Length: 10, 20" must not fall back to reading until the connection closes,
        // which could pass a truncated body off as the whole blob.
        let server = try ScriptedHTTPServer { _ in
            var response = Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 20\r\nConnection: close\r\n\r\n".utf8)
            response += [UInt8](repeating: 7, count: 10)
            return response
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let opened = try await blocking {
            let source = HTTPDataSource(url: url)
            defer { source.close() }
            return try SourceReader(source: source).open()
        }
        guard case .failure(.protocolViolation(url: url.absoluteString, reason: let reason)) = opened else {
            Issue.record("expected a refusal, got \(opened)")
            return
        }
        #expect(reason.contains("Content-Length"))
    }

    @Test func blobReplacedBeforeASeekFailsWithSourceChanged() async throws {
        let blob = try ServedBlob(size: 1024 * 1024, seed: 3)
        defer { blob.remove() }
        let url = try blob.url()
        let (start, result) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 64 * 1024))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            let start = try reader.read(at: 0, count: 1000)
            try blob.replace(with: TempFiles.pseudoRandomBytes(count: 1024 * 1024, seed: 4))
            return (start, try reader.readToEnd(from: 500_000))
        }
        #expect(start == .read(1000))
        guard case .failure(.sourceChanged(let resource, 500_000, let reason)) = result else {
            Issue.record("expected sourceChanged at 500000, got \(result)")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(reason.contains("version"))
    }

    @Test(arguments: transports)
    func serverThatNeverAnswersTimesOut(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireNginx()
        try TestServers.requireStallServer()
        let url = TestServers.stallForeverURL()
        let (result, statistics) = try await blocking {
            let source = HTTPDataSource(
                url: url, configuration: .init(requestTimeout: 0.5, idleTimeout: 0.5, maxRetries: 1, retryDelay: 0.05, transport: transport))
            defer { source.close() }
            return (try SourceReader(source: source, timeout: 20).open(), source.statistics)
        }
        guard case .failure(.timedOut(let resource, let operation, 0.5)) = result else {
            Issue.record("expected a time-out, got \(result)")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(operation.contains("waiting for the response"))
        #expect(operation.contains("2 attempts"))
        #expect(statistics.requests == 2)
    }

    @Test(arguments: transports)
    func serverThatStallsMidBodyTimesOut(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireNginx()
        try TestServers.requireStallServer()
        let url = TestServers.stallURL(afterBytes: 100_000, total: 200_000)
        let (description, result) = try await blocking {
            // The retry's head must arrive within the request time-out: under load, URLSession's
            // one process-wide queue once held it back for 5 s (the error was then that one).
            let source = HTTPDataSource(
                url: url, configuration: .init(requestTimeout: 60, idleTimeout: 0.5, maxRetries: 1, retryDelay: 0.05, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 90)
            return (try reader.open().get(), try reader.readToEnd())
        }
        #expect(description.length == 200_000)
        guard case .failure(.timedOut(_, let operation, 0.5)) = result else {
            Issue.record("expected a time-out, got \(result)")
            return
        }
        #expect(operation.contains("body bytes at offset 100000"))
    }

    @Test(arguments: transports)
    func unreachableServerFailsAfterTheRetries(transport: HTTPDataSource.Transport) async throws {
        let url = URL(string: "http://127.0.0.1:9/blob")!
        let (result, statistics) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(maxRetries: 3, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            return (try SourceReader(source: source, timeout: 20).open(), source.statistics)
        }
        guard case .failure(.network(let failedURL, let reason)) = result else {
            Issue.record("expected a network error, got \(result)")
            return
        }
        #expect(failedURL == url.absoluteString)
        #expect(reason.contains("4 attempts"))
        #expect(statistics.requests == 4)
        #expect(statistics.reconnects == 3)
    }

    @Test func unsupportedURLsAndHeadersAreRefusedAtOpen() async throws {
        let (ftp, injected) = try await blocking {
            let ftp = HTTPDataSource(url: URL(string: "ftp://127.0.0.1/blob")!)
            let injected = HTTPDataSource(url: TestServers.nginxURL, configuration: .init(headers: ["X-Evil": "a\r\nHost: b"]))
            return (try SourceReader(source: ftp).open(), try SourceReader(source: injected).open())
        }
        guard case .failure(.unsupportedURL) = ftp else {
            Issue.record("ftp: accepted")
            return
        }
        guard case .failure(.sourceFailed(_, let reason)) = injected else {
            Issue.record("a header with a line break was accepted")
            return
        }
        #expect(reason.contains("line break"))
        #expect(throws: BlobStreamError.self) { try BlobURLRegistry.shared.dataSource(for: URL(string: "http:///nohost")!) }
    }
}
