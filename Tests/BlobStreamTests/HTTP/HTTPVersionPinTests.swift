import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The version pin against scripted servers that answer a later request with another (or no)
/// version: every such answer is `sourceChanged` at the offset asked for, never bytes of it.
@Suite struct HTTPVersionPinTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]
    static let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 61)
    static let lastModified = "Sat, 21 Nov 2026 13:32:08 GMT"
    static let anHourLater = "Sat, 21 Nov 2026 14:32:08 GMT"

    /// The range a request asks for, clamped to the blob: `(first, last)`.
    static func range(of request: ScriptedHTTPServer.Request, count: Int = bytes.count) -> (Int, Int) {
        let spec = (request.fields["range"] ?? "").dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        let first = Int(spec.first ?? "") ?? 0
        let last = min(spec.count > 1 ? Int(spec[1]) ?? count - 1 : count - 1, count - 1)
        return (first, last)
    }

    /// A 206 for the range `request` asks, with `fields` and the blob's length as `total`.
    static func partial(_ request: ScriptedHTTPServer.Request, fields: [String: String], total: String = "\(bytes.count)", from start: Int? = nil) -> [UInt8] {
        var (first, last) = range(of: request)
        first = start ?? first
        var fields = fields
        fields["Content-Range"] = "bytes \(first)-\(last)/\(total)"
        return ScriptedHTTPServer.response(status: "206 Partial Content", fields: fields, body: Array(bytes[first...last]))
    }

    /// Opens a source on a server that answers the first request (from byte 0) with `first`
    /// fields and every later one as `later` says; reads a little at 0, then seeks to 50,000.
    /// Returns the read at 50,000 and the requests the server received.
    static func seekAfterPin(
        transport: HTTPDataSource.Transport,
        first: [String: String],
        later: @escaping @Sendable (ScriptedHTTPServer.Request) -> [UInt8]
    ) async throws -> (BlobSourceReadResult, [ScriptedHTTPServer.Request], URL) {
        let server = try ScriptedHTTPServer { request in
            range(of: request).0 == 0 ? partial(request, fields: first) : later(request)
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 16 * 1024, maxRetries: 1, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 20)
            _ = try reader.open().get()
            guard try reader.read(at: 0, count: 1000) == .read(1000) else { throw TestSupportError("no bytes at 0") }
            var buffer = [UInt8](repeating: 0, count: 1000)
            let result = try reader.read(at: 50_000, into: &buffer)
            if case .read(let count) = result, buffer[0..<count] != bytes[50_000..<50_000 + count] {
                throw TestSupportError("the bytes read at 50000 are not the blob's")
            }
            return result
        }
        return (result, server.parsedRequests, url)
    }

    /// Expects `result` to be `sourceChanged` at 50,000 with a reason that mentions `word`.
    static func expectChanged(_ result: BlobSourceReadResult, _ url: URL, mentioning word: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .failed(.sourceChanged(let resource, 50_000, let reason)) = result else {
            Issue.record("expected sourceChanged at 50000, got \(result)", sourceLocation: sourceLocation)
            return
        }
        #expect(resource == url.absoluteString, sourceLocation: sourceLocation)
        #expect(reason.contains(word), "\(reason)", sourceLocation: sourceLocation)
    }

    @Test(arguments: transports)
    func entityTagThatDisappearsIsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        let (result, requests, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) {
            Self.partial($0, fields: [:])
        }
        Self.expectChanged(result, url, mentioning: "ETag")
        #expect(requests.last?.fields["if-range"] == "\"v1\"")
    }

    /// A blob that shrank below the offset asked for: a server that checks the range before
    /// If-Range answers 416 with the new total, or with new validators; either is another
    /// version, not a failed request.
    @Test(arguments: transports)
    func a416NamingAnotherLengthOrVersionIsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        let (shorter, _, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) { _ in
            ScriptedHTTPServer.response(status: "416 Range Not Satisfiable", fields: ["Content-Range": "bytes */40000", "ETag": "\"v1\""])
        }
        Self.expectChanged(shorter, url, mentioning: "40000")
        let (retagged, _, otherURL) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) { _ in
            ScriptedHTTPServer.response(status: "416 Range Not Satisfiable", fields: ["ETag": "\"v2\""])
        }
        Self.expectChanged(retagged, otherURL, mentioning: "\"v2\"")
    }

    @Test(arguments: transports)
    func entityTagThatChangesInA206IsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        // A server that ignores If-Range and sends the new version's bytes as asked.
        let (result, _, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) {
            Self.partial($0, fields: ["ETag": "\"v2\""])
        }
        Self.expectChanged(result, url, mentioning: "\"v2\"")
    }

    @Test(arguments: transports)
    func strongLastModifiedStandsInForAMissingEntityTag(transport: HTTPDataSource.Transport) async throws {
        // Date an hour after Last-Modified makes it a strong validator (RFC 9110 §8.8.2.2), so it
        // goes in If-Range; and it must not change or vanish.
        let first = ["Last-Modified": Self.lastModified, "Date": Self.anHourLater]
        let (changed, requests, url) = try await Self.seekAfterPin(transport: transport, first: first) {
            Self.partial($0, fields: ["Last-Modified": Self.anHourLater, "Date": Self.anHourLater])
        }
        Self.expectChanged(changed, url, mentioning: "Last-Modified")
        #expect(requests.last?.fields["if-range"] == Self.lastModified)
        let (vanished, _, otherURL) = try await Self.seekAfterPin(transport: transport, first: first) {
            Self.partial($0, fields: ["Date": Self.anHourLater])
        }
        Self.expectChanged(vanished, otherURL, mentioning: "Last-Modified")
    }

    @Test(arguments: transports)
    func weakLastModifiedIsComparedButNotSentAsIfRange(transport: HTTPDataSource.Transport) async throws {
        // No Date: the modification time may hide two versions within its second, so it is no
        // strong validator and may not go in If-Range; it is still compared.
        let (result, requests, url) = try await Self.seekAfterPin(transport: transport, first: ["Last-Modified": Self.lastModified]) {
            Self.partial($0, fields: ["Last-Modified": Self.anHourLater])
        }
        Self.expectChanged(result, url, mentioning: "Last-Modified")
        #expect(requests.count >= 2)
        #expect(requests.allSatisfy { $0.fields["if-range"] == nil })
    }

    @Test(arguments: transports)
    func weakEntityTagIsComparedButNeverSentAsIfRange(transport: HTTPDataSource.Transport) async throws {
        let (changed, requests, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "W/\"w1\""]) {
            Self.partial($0, fields: ["ETag": "W/\"w2\""])
        }
        Self.expectChanged(changed, url, mentioning: "W/\"w2\"")
        #expect(requests.allSatisfy { $0.fields["if-range"] == nil }, "RFC 9110 §13.1.5: no weak tag in If-Range")
        let (vanished, _, otherURL) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "W/\"w1\""]) {
            Self.partial($0, fields: [:])
        }
        Self.expectChanged(vanished, otherURL, mentioning: "ETag")
    }

    @Test(arguments: transports)
    func contentRangeTotalThatDiffersFromThePinIsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        let (result, _, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) {
            Self.partial($0, fields: ["ETag": "\"v1\""], total: "100001")
        }
        Self.expectChanged(result, url, mentioning: "length")
    }

    @Test(arguments: transports)
    func lengthLearnedAfterAnUnknownOneIsPinnedToo(transport: HTTPDataSource.Transport) async throws {
        // The first answer does not name the length (`*`); the next one does, and from then on
        // another length is another version.
        let server = try ScriptedHTTPServer { request in
            let first = Self.range(of: request).0
            let total = first == 0 ? "*" : first < 80_000 ? "100000" : "120000"
            return Self.partial(request, fields: ["ETag": "\"v1\""], total: total)
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let (learned, result) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 16 * 1024, maxRetries: 1, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 20)
            _ = try reader.open().get()
            return (try reader.read(at: 50_000, count: 1000), try reader.read(at: 90_000, count: 1000))
        }
        #expect(learned == .read(1000))
        guard case .failed(.sourceChanged(url.absoluteString, 90_000, let reason)) = result else {
            Issue.record("expected sourceChanged at 90000, got \(result)")
            return
        }
        #expect(reason.contains("length"))
    }

    @Test(arguments: transports)
    func rangeThatRunsPastTheKnownLengthIsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        // A server that names no version: the length is all there is to check, and a range that
        // ends past it (`*` total) is a longer blob, another version.
        let longer = TempFiles.pseudoRandomBytes(count: 150_000, seed: 62)
        let (result, _, url) = try await Self.seekAfterPin(transport: transport, first: [:]) { request in
            let first = Self.range(of: request).0
            return ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes \(first)-149999/*"], body: Array(longer[first...]))
        }
        Self.expectChanged(result, url, mentioning: "length")
    }

    @Test(arguments: transports)
    func contentRangeThatStartsElsewhereIsAProtocolViolation(transport: HTTPDataSource.Transport) async throws {
        let (result, _, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) {
            Self.partial($0, fields: ["ETag": "\"v1\""], from: 49_000)
        }
        guard case .failed(.protocolViolation(url.absoluteString, let reason)) = result else {
            Issue.record("expected protocolViolation, got \(result)")
            return
        }
        #expect(reason.contains("50000") && reason.contains("49000"), "\(reason)")
    }

    @Test(arguments: transports)
    func wholeBlobAnswerWithoutTheVersionIsSourceChanged(transport: HTTPDataSource.Transport) async throws {
        let (result, _, url) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) { _ in
            ScriptedHTTPServer.response(status: "200 OK", body: Self.bytes)
        }
        Self.expectChanged(result, url, mentioning: "ETag")
    }

    @Test(arguments: transports)
    func wholeBlobAnswerOfTheSameVersionIsSkippedToTheOffset(transport: HTTPDataSource.Transport) async throws {
        // A server that stops honouring Range but still names the pinned version: its 200 is
        // the same bytes from 0, so the reader skips to where it was (and checks the bytes).
        let (result, _, _) = try await Self.seekAfterPin(transport: transport, first: ["ETag": "\"v1\""]) { _ in
            ScriptedHTTPServer.response(status: "200 OK", fields: ["ETag": "\"v1\""], body: Self.bytes)
        }
        #expect(result == .read(1000))
    }

    @Test func wholeBlobAnswerOfUnknownLengthMustReachThePinnedLength() async throws {
        // The pinned length is 100,000; a chunked 200 of the same version that ends at 80,000
        // is a short body, not a shorter blob.
        let server = try ScriptedHTTPServer { request in
            guard Self.range(of: request).0 != 0 else { return Self.partial(request, fields: ["ETag": "\"v1\""]) }
            var answer = Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
            answer += Array(String(80_000, radix: 16).utf8) + [13, 10] + Array(Self.bytes[0..<80_000]) + Array("\r\n0\r\n\r\n".utf8)
            return answer
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 16 * 1024, maxRetries: 1, retryDelay: 0.01))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 20)
            _ = try reader.open().get()
            guard try reader.read(at: 0, count: 1000) == .read(1000) else { throw TestSupportError("no bytes at 0") }
            return try reader.readToEnd(from: 50_000)
        }
        guard case .failure(.network(url.absoluteString, let reason)) = result else {
            Issue.record("expected a network error at 80000, got \(result)")
            return
        }
        #expect(reason.contains("offset 80000"), "\(reason)")
    }
}
