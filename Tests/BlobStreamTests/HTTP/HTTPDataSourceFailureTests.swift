import BlobStream
import Foundation
import Testing

/// HTTP errors, changed blobs, stalls and unreachable servers: each a typed error, never a hang
/// and never bytes of two versions.
@Suite struct HTTPDataSourceFailureTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    @Test(arguments: transports)
    func missingBlobIs404(transport: HTTPDataSource.Transport) async throws {
        try HTTPFixture.requireNginx()
        let url = HTTPFixture.url("http-tests/no-such-blob.bin")
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
        // reader learns where the blob ends only from a 416 at exactly that offset.
        let bytes = HTTPFixture.pattern(size: 1000, seed: 9)
        let server = try ScriptedHTTPServer { request in
            if request.fields["range"]?.hasPrefix("bytes=0-") == true {
                return ScriptedHTTPServer.response(
                    status: "206 Partial Content", fields: ["Content-Range": "bytes 0-999/*", "ETag": "\"v1\""], body: bytes)
            }
            return ScriptedHTTPServer.response(status: "416 Range Not Satisfiable", fields: ["Content-Range": "bytes */1000"])
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let (description, whole, beyond) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            let description = try reader.open().get()
            let whole = try reader.readToEnd().get()
            let other = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { other.close() }
            let otherReader = SourceReader(source: other)
            _ = try otherReader.open().get()
            return (description, whole, try otherReader.read(at: 2000, count: 10))
        }
        #expect(description.length == nil)
        #expect(whole == bytes)
        #expect(beyond == .failed(.httpStatus(url: url.absoluteString, statusCode: 416)))
        #expect(server.requests.allSatisfy { $0.fields["if-range"] == nil || $0.fields["if-range"] == "\"v1\"" })
    }

    @Test func blobReplacedMidStreamFailsWithoutMixingVersions() async throws {
        // Over URLSession every buffer-full is a new request, each pinned with If-Range.
        let blob = try HTTPFixture.makeBlob(size: 4 * 1024 * 1024, seed: 1)
        let url = HTTPFixture.url(blob.path)
        let (delivered, outcome) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 64 * 1024, transport: .urlSession))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            var delivered: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            var replaced = false
            while true {
                let outcome = try reader.read(at: Int64(delivered.count), into: &buffer)
                guard case .read(let count) = outcome else { return (delivered, outcome) }
                delivered += buffer[0..<count]
                if !replaced && delivered.count >= 256 * 1024 {
                    replaced = true
                    try HTTPFixture.write(HTTPFixture.pattern(size: 4 * 1024 * 1024, seed: 2), to: blob.path, age: 3600)
                }
            }
        }
        guard case .failed(.sourceChanged(let resource, let offset, let reason)) = outcome else {
            Issue.record("expected sourceChanged, got \(outcome) after \(delivered.count) bytes")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(offset == Int64(delivered.count))
        #expect(reason.contains("version"))
        #expect(delivered == Array(blob.bytes[0..<delivered.count]), "every byte delivered is of the first version")
    }

    @Test func blobReplacedBeforeASeekFailsWithSourceChanged() async throws {
        let blob = try HTTPFixture.makeBlob(size: 1024 * 1024, seed: 3)
        let (start, result) = try await blocking {
            let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(readAheadLimit: 64 * 1024))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            let start = try reader.read(at: 0, count: 1000)
            try HTTPFixture.write(HTTPFixture.pattern(size: 1024 * 1024, seed: 4), to: blob.path, age: 3600)
            return (start, try reader.readToEnd(from: 500_000))
        }
        #expect(start == .read(1000))
        guard case .failure(.sourceChanged(_, 500_000, _)) = result else {
            Issue.record("expected sourceChanged at 500000, got \(result)")
            return
        }
    }

    @Test(arguments: transports)
    func serverThatNeverAnswersTimesOut(transport: HTTPDataSource.Transport) async throws {
        try HTTPFixture.requireNginx()
        let started = Date()
        let (result, statistics) = try await blocking {
            let source = HTTPDataSource(
                url: HTTPFixture.url("stall/forever"),
                configuration: .init(requestTimeout: 0.5, idleTimeout: 0.5, maxRetries: 1, retryDelay: 0.05, transport: transport))
            defer { source.close() }
            return (try SourceReader(source: source, timeout: 20).open(), source.statistics)
        }
        guard case .failure(.timedOut(_, let operation, 0.5)) = result else {
            Issue.record("expected a time-out, got \(result)")
            return
        }
        #expect(operation.contains("waiting for the response"))
        #expect(operation.contains("2 attempts"))
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(statistics.requests == 2)
    }

    @Test(arguments: transports)
    func serverThatStallsMidBodyTimesOut(transport: HTTPDataSource.Transport) async throws {
        try HTTPFixture.requireNginx()
        let (description, result) = try await blocking {
            let source = HTTPDataSource(
                url: HTTPFixture.url("stall/after/100000/200000"),
                configuration: .init(requestTimeout: 5, idleTimeout: 0.5, maxRetries: 1, retryDelay: 0.05, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 20)
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

    @Test func unsupportedURLsAreRefusedAtOpen() async throws {
        let (ftp, injected) = try await blocking {
            let ftp = HTTPDataSource(url: URL(string: "ftp://127.0.0.1/blob")!)
            let injected = HTTPDataSource(url: HTTPFixture.nginx, configuration: .init(headers: ["X-Evil": "a\r\nHost: b"]))
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
