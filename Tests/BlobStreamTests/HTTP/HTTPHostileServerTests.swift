import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Servers that break HTTP, scripted byte for byte: each answer is a typed error that names the
/// URL, on both transports, and never bytes reported as the blob's.
@Suite struct HTTPHostileServerTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]
    static let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 71)

    /// A raw answer: `head` lines (CRLF added), then `body`.
    static func raw(_ head: [String], body: [UInt8] = []) -> [UInt8] {
        Array((head.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body
    }

    /// `payload` in one chunk, then the last chunk.
    static func chunked(_ payload: [UInt8]) -> [UInt8] {
        Array("\(String(payload.count, radix: 16))\r\n".utf8) + payload + Array("\r\n0\r\n\r\n".utf8)
    }

    /// Opens a source on a server that always answers `answer`, and reads it to the end.
    static func read(_ answer: [UInt8], transport: HTTPDataSource.Transport) async throws -> (Result<[UInt8], BlobStreamError>, URL) {
        let server = try ScriptedHTTPServer { _ in answer }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(requestTimeout: 5, idleTimeout: 5, maxRetries: 1, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            switch try reader.open() {
            case .failure(let error): return Result<[UInt8], BlobStreamError>.failure(error)
            case .success: return try reader.readToEnd()
            }
        }
        return (result, url)
    }

    /// Expects a protocol violation for `url` whose reason mentions every one of `words`.
    static func expectViolation(_ result: Result<[UInt8], BlobStreamError>, _ url: URL, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failure(.protocolViolation(let failedURL, let reason)) = result else {
            Issue.record("expected protocolViolation, got \(result.map(\.count))", sourceLocation: sourceLocation)
            return
        }
        #expect(failedURL == url.absoluteString, sourceLocation: sourceLocation)
        for word in words { #expect(reason.contains(word), "\(reason)", sourceLocation: sourceLocation) }
    }

    @Test(arguments: ["HTTP/1.1 200 OK", "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-59999/60000"])
    func bodyLongerThanItsHeadSaysIsRefused(status: String) async throws {
        // The blob has 100,000 bytes but the head announces 60,000: delivering those would be a
        // silently short blob. (FoundationNetworking drops such bytes unseen: only the socket
        // transport can tell.)
        let answer = Self.raw([status, "Content-Length: 60000", "Connection: close"], body: Self.bytes)
        let (result, url) = try await Self.read(answer, transport: .automatic)
        Self.expectViolation(result, url, mentioning: ["more bytes after the 60000 bytes of body"])
    }

    @Test(arguments: transports)
    func transferCodingOtherThanChunkedIsRefused(transport: HTTPDataSource.Transport) async throws {
        // The body is the blob in chunked framing, but labelled gzip first: read as is, it would
        // pass the "gzip" bytes off as the blob's.
        for coding in ["gzip, chunked", "x-custom, chunked", "chunked, chunked"] {
            let answer = Self.raw(["HTTP/1.1 200 OK", "Transfer-Encoding: \(coding)", "Connection: close"], body: Self.chunked(Self.bytes))
            let (result, url) = try await Self.read(answer, transport: transport)
            Self.expectViolation(result, url, mentioning: ["transfer coding", String(coding.prefix(while: { $0 != "," }))])
        }
    }

    @Test(arguments: transports)
    func contentCodingIsRefusedIn200And206(transport: HTTPDataSource.Transport) async throws {
        let partial = Self.raw(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-99999/100000", "Content-Length: 100000",
                                "Content-Encoding: br", "Connection: close"], body: Self.bytes)
        let whole = Self.raw(["HTTP/1.1 200 OK", "Content-Length: 100000", "Content-Encoding: identity, x-zip", "Connection: close"], body: Self.bytes)
        for answer in [partial, whole] {
            let (result, url) = try await Self.read(answer, transport: transport)
            Self.expectViolation(result, url, mentioning: ["content coding"])
        }
    }

    @Test(arguments: transports)
    func transferEncodingWithContentLengthIsRefused(transport: HTTPDataSource.Transport) async throws {
        let answer = Self.raw(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Content-Length: 100000", "Connection: close"], body: Self.chunked(Self.bytes))
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["Transfer-Encoding", "Content-Length"])
    }

    @Test(arguments: transports, ["-5", "abc", "+100000", "100000, 99999", "99999999999999999999"])
    func unusableContentLengthIsRefused(transport: HTTPDataSource.Transport, value: String) async throws {
        let answer = Self.raw(["HTTP/1.1 200 OK", "Content-Length: \(value)", "Connection: close"], body: Self.bytes)
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["Content-Length"])
    }

    @Test(arguments: transports, ["HTTP/1.1 abc OK", "HELLO", "HTTP/1.1 206 Partial Content\r\nno colon here"])
    func malformedHeadIsRefused(transport: HTTPDataSource.Transport, statusLine: String) async throws {
        let answer = Self.raw([statusLine, "Content-Length: 10"], body: Array(Self.bytes[0..<10]))
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["offset 0"])
    }

    @Test(arguments: transports)
    func headerOver64KiBIsRefused(transport: HTTPDataSource.Transport) async throws {
        let answer = Self.raw(["HTTP/1.1 200 OK", "X-Big: " + String(repeating: "a", count: 70_000), "Content-Length: 100000", "Connection: close"], body: Self.bytes)
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["65536"])
    }

    @Test(arguments: transports)
    func moreThan100HeaderFieldsAreRefused(transport: HTTPDataSource.Transport) async throws {
        let many = (0..<101).map { "X-Field-\($0): \($0)" }
        let answer = Self.raw(["HTTP/1.1 200 OK", "Content-Length: 100000", "Connection: close"] + many, body: Self.bytes)
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["header fields"])
    }

    @Test(arguments: transports, ["zz", "-0", "+10", "FFFFFFFFFFFFFFFFFF", "8000000000000000"])
    func chunkSizeThatIsNoHexInt64IsRefused(transport: HTTPDataSource.Transport, size: String) async throws {
        let answer = Self.raw(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Connection: close"],
                              body: Array(Self.chunked(Array(Self.bytes[0..<1000])).dropLast(5)) + Array("\(size)\r\nabc\r\n0\r\n\r\n".utf8))
        let (result, url) = try await Self.read(answer, transport: transport)
        Self.expectViolation(result, url, mentioning: ["chunk", "offset 1000"])
    }

    /// Sockets only: URLSession on Linux (swift-corelibs-foundation 6.3) ends the process with
    /// "Transfer completed, but there's no response" when a peer closes inside the head
    /// (swift-corelibs-foundation issue 5285, fixed by pull request 5286 in a later release).
    @Test func peerThatClosesMidHeadIsANetworkError() async throws {
        let (result, url) = try await Self.read(Array("HTTP/1.1 200 OK\r\nContent-Len".utf8), transport: .automatic)
        guard case .failure(.network(url.absoluteString, let reason)) = result else {
            Issue.record("expected a network error, got \(result.map(\.count))")
            return
        }
        #expect(reason.contains("offset 0") && reason.contains("2 attempts"), "\(reason)")
    }

    @Test(arguments: transports)
    func peerThatClosesMidBodyIsANetworkErrorAtTheOffset(transport: HTTPDataSource.Transport) async throws {
        // Announces 100,000 bytes, sends 50,000 and closes; and the same from 50,000 on retry.
        let server = try ScriptedHTTPServer { request in
            let first = HTTPVersionPinTests.range(of: request).0
            return Self.raw(["HTTP/1.1 206 Partial Content", "Content-Range: bytes \(first)-99999/100000",
                             "Content-Length: \(100_000 - first)", "ETag: \"h1\"", "Connection: close"],
                            body: Array(Self.bytes[first..<max(first, 50_000)]))
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let (delivered, outcome) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1 << 20, maxRetries: 1, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            _ = try reader.open().get()
            return try reader.readUntilStopped()
        }
        #expect(delivered == Array(Self.bytes[0..<50_000]))
        guard case .failed(.network(url.absoluteString, let reason)) = outcome else {
            Issue.record("expected a network error at 50000, got \(outcome)")
            return
        }
        #expect(reason.contains("offset 50000"), "\(reason)")
    }

    @Test(arguments: transports)
    func peerThatClosesInsideAChunkIsANetworkErrorAtTheOffset(transport: HTTPDataSource.Transport) async throws {
        // A chunked body of unknown length announces a chunk of 100,000 bytes, sends 50,000 and
        // closes: the end of the connection is not the end of the blob.
        let answer = Self.raw(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Connection: close"],
                              body: Array("\(String(100_000, radix: 16))\r\n".utf8) + Array(Self.bytes[0..<50_000]))
        let server = try ScriptedHTTPServer { _ in answer }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1 << 20, maxRetries: 1, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            _ = try reader.open().get()
            return try reader.readToEnd()
        }
        guard case .failure(.network(url.absoluteString, let reason)) = result else {
            Issue.record("expected a network error at 50000, got \(result.map(\.count))")
            return
        }
        #expect(reason.contains("offset 50000"), "\(reason)")
    }
}
