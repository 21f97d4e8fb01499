import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// Bodies that go on past their end: the end a `Content-Range` declares, or the blob's length an
/// earlier answer told. Cutting the excess off would pass a body of another length for the
/// blob's, and asking again from the end would meet the same excess, request after request.
@Suite struct HTTPBodyOverrunTests {
    typealias Hostile = HTTPHostileServerTests

    /// A `206` for bytes 0-59,999 whose body, chunked or ended by the close, carries 100,000;
    /// asked again from byte 60,000, the server says the blob ends there (`416`).
    @Test(arguments: Hostile.transports)
    func aRangeBodyLongerThanItsContentRangeIsRefused(transport: HTTPDataSource.Transport) async throws {
        let head = ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-59999/60000", "Connection: close"]
        let chunked = Hostile.raw(head + ["Transfer-Encoding: chunked"], body: Hostile.chunked(Hostile.bytes))
        let closeDelimited = Hostile.raw(head, body: Hostile.bytes)
        let end = Hostile.raw(["HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */60000", "Content-Length: 0", "Connection: close"])
        for answer in [chunked, closeDelimited] {
            let server = try ScriptedHTTPServer { request in
                request.fields["range"]?.hasPrefix("bytes=60000-") == true ? end : answer
            }
            defer { server.stop() }
            let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
            let result = try await Self.read(url, transport: transport, retries: 1)
            Hostile.expectViolation(result, url, mentioning: ["past its declared end", "60000"])
        }
    }

    /// The first answer says 100,000 bytes and breaks off; the answer to the reconnect, of no
    /// declared length, goes on past them: another version, not a blob cut to the old length.
    @Test(arguments: Hostile.transports)
    func aLongerBodyAfterAReconnectIsAnotherVersion(transport: HTTPDataSource.Transport) async throws {
        let requests = LockedValue(0)
        let longer = TempFiles.pseudoRandomBytes(count: 120_000, seed: 72)
        let server = try ScriptedHTTPServer { _ in
            let number = requests.withLock { $0 += 1; return $0 }
            if number == 1 {
                return Hostile.raw(["HTTP/1.1 200 OK", "Content-Length: 100000", "Connection: close"], body: Array(longer.prefix(50_000)))
            }
            return Hostile.raw(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Connection: close"], body: Hostile.chunked(longer))
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let result = try await Self.read(url, transport: transport, retries: 3)
        guard case .failure(.sourceChanged(let resource, let offset, let reason)) = result else {
            Issue.record("expected sourceChanged, got \(result.map(\.count))")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(offset == 100_000, "\(reason)")
        #expect(reason.contains("100000 bytes"), "\(reason)")
        #expect(requests.withLock { $0 } <= 4, "no request storm")
    }

    /// Opens a source on `url` and reads it to the end.
    static func read(_ url: URL, transport: HTTPDataSource.Transport, retries: Int) async throws -> Result<[UInt8], BlobStreamError> {
        try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(
                requestTimeout: 5, idleTimeout: 5, maxRetries: retries, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            switch try reader.open() {
            case .failure(let error): return Result<[UInt8], BlobStreamError>.failure(error)
            case .success: return try reader.readToEnd()
            }
        }
    }
}
