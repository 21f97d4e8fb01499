@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A status that says to ask again later (S3's `503 Slow Down`, a `429`, a gateway's `502`) is
/// retried like a dropped connection, from where the data stopped and waiting at least its
/// `Retry-After`; any other status, or one that asks for a long wait, is the error at once.
@Suite struct HTTPTransientStatusTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]
    static let bytes = TempFiles.pseudoRandomBytes(count: 20_000, seed: 41)

    /// Numbers the requests a scripted server answers.
    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int { lock.withLock { value += 1; return value - 1 } }
    }

    /// The 206 answer to `range` (`bytes=N-`) of ``bytes``, whole or with only `sending` bytes
    /// of its body (a body cut short).
    static func partial(_ range: String?, sending: Int? = nil) -> [UInt8] {
        let first = range.flatMap { Int($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
        let body = Array(bytes[first...])
        let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(first)-\(bytes.count - 1)/\(bytes.count)\r\n"
            + "Content-Length: \(body.count)\r\nETag: \"v1\"\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body.prefix(sending ?? body.count)
    }

    static func unavailable(retryAfter: String? = nil) -> [UInt8] {
        ScriptedHTTPServer.response(status: "503 Service Unavailable", fields: retryAfter.map { ["Retry-After": $0] } ?? [:])
    }

    /// Reads the server's blob with `retries` reconnects; the bytes or the error, and the
    /// seconds it took.
    static func read(
        _ server: ScriptedHTTPServer, transport: HTTPDataSource.Transport, retries: Int = 5
    ) async throws -> (Result<[UInt8], BlobStreamError>, TimeInterval) {
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        return try await blocking {
            let started = Date()
            let source = HTTPDataSource(url: url, configuration: .init(
                requestTimeout: 5, idleTimeout: 0.5, maxRetries: retries, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            if case .failure(let error) = try reader.open() { return (.failure(error), Date().timeIntervalSince(started)) }
            return (try reader.readToEnd(), Date().timeIntervalSince(started))
        }
    }

    /// Expects the blob read whole from a server that answers with `answers` first, in order,
    /// then with the blob: each answer asked again.
    static func expectWhole(after answers: [[UInt8]], transport: HTTPDataSource.Transport, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let count = Count()
        let server = try ScriptedHTTPServer { request in
            let number = count.next()
            return number < answers.count ? answers[number] : Self.partial(request.fields["range"])
        }
        defer { server.stop() }
        let (result, _) = try await Self.read(server, transport: transport)
        #expect(try result.get() == Self.bytes, sourceLocation: sourceLocation)
        #expect(server.parsedRequests.count == answers.count + 1, sourceLocation: sourceLocation)
    }

    @Test(arguments: transports)
    func aTransientStatusIsAskedAgain(transport: HTTPDataSource.Transport) async throws {
        try await Self.expectWhole(after: [
            Self.unavailable(), ScriptedHTTPServer.response(status: "429 Too Many Requests"),
            ScriptedHTTPServer.response(status: "502 Bad Gateway"),
        ], transport: transport)
    }

    /// A status's body in a content coding (a gateway's gzipped error page) is no reason to
    /// give up: the coding matters only for the blob's own bytes.
    @Test(arguments: transports)
    func aCodedErrorBodyIsStillAStatus(transport: HTTPDataSource.Transport) async throws {
        let coded = ScriptedHTTPServer.response(
            status: "503 Service Unavailable", fields: ["Content-Encoding": "gzip"], body: [0x1F, 0x8B, 0x08, 0x00])
        try await Self.expectWhole(after: [coded], transport: transport)
    }

    /// A status after part of the body is asked again from the first byte not yet read.
    @Test(arguments: transports)
    func aStatusAfterPartOfTheBodyIsAskedAgainFromWhereItStopped(transport: HTTPDataSource.Transport) async throws {
        let count = Count()
        let server = try ScriptedHTTPServer { request in
            switch count.next() {
            case 0: Self.partial(request.fields["range"], sending: 8000)
            case 1: Self.unavailable(retryAfter: "0")
            default: Self.partial(request.fields["range"])
            }
        }
        defer { server.stop() }
        let (result, _) = try await Self.read(server, transport: transport)
        #expect(try result.get() == Self.bytes)
        let requests = server.parsedRequests
        #expect(requests.count == 3)
        #expect(requests.dropFirst().allSatisfy { $0.fields["range"]?.hasPrefix("bytes=8000-") == true }, "\(requests.map(\.fields))")
    }

    /// A server that stays unavailable fails the read with its status once the reconnects are
    /// spent, not with a network error.
    @Test(arguments: transports)
    func aServerThatStaysUnavailableFailsWithItsStatus(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { _ in Self.unavailable() }
        defer { server.stop() }
        let (result, _) = try await Self.read(server, transport: transport, retries: 2)
        #expect(throws: BlobStreamError.httpStatus(url: "http://127.0.0.1:\(server.port)/blob", statusCode: 503)) { try result.get() }
        #expect(server.parsedRequests.count == 3)
    }

    /// `Retry-After` is waited for, although the reconnect delay is far shorter.
    @Test(arguments: transports)
    func retryAfterIsWaitedFor(transport: HTTPDataSource.Transport) async throws {
        let count = Count()
        let server = try ScriptedHTTPServer { request in
            count.next() == 0 ? Self.unavailable(retryAfter: "1") : Self.partial(request.fields["range"])
        }
        defer { server.stop() }
        let (result, seconds) = try await Self.read(server, transport: transport)
        #expect(try result.get() == Self.bytes)
        #expect(seconds >= 0.95, "\(seconds)")
    }

    /// A seek while the source waits out a `Retry-After` asks for the new offset once the wait
    /// is over, not at once: the reader's seek is no reason to ask a server that said when
    /// to come back.
    @Test(arguments: transports)
    func aSeekDuringTheWaitStillWaits(transport: HTTPDataSource.Transport) async throws {
        let count = Count()
        let arrivals = Locked<[Date]>([])
        let server = try ScriptedHTTPServer { request in
            arrivals.value.append(Date())
            switch count.next() {
            case 0: return Self.partial(request.fields["range"], sending: 8000)
            case 1: return Self.unavailable(retryAfter: "1")
            default: return Self.partial(request.fields["range"])
            }
        }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let sought = try await blocking { () throws -> [UInt8] in
            var configuration = HTTPDataSource.Configuration(
                requestTimeout: 5, idleTimeout: 0.5, maxRetries: 5, retryDelay: 0.01, transport: transport)
            // The second reconnect is the one the 503 asks to wait for.
            let waiting = DispatchSemaphore(value: 0)
            let reconnects = Count()
            configuration.retryObserver = { _ in if reconnects.next() == 1 { waiting.signal() } }
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            let reader = SourceReader(source: source, timeout: 30)
            _ = try reader.open().get()
            var delivered = 0
            while delivered < 8000 {
                guard case .read(let read) = try reader.read(at: Int64(delivered), count: 8000 - delivered) else {
                    throw TestSupportError("the first 8000 bytes did not arrive")
                }
                delivered += read
            }
            guard waiting.wait(timeout: .now() + 30) == .success else { throw TestSupportError("the 503 was not seen") }
            var buffer = [UInt8](repeating: 0, count: 100)
            guard case .read(let read) = try reader.read(at: 15_000, into: &buffer) else { throw TestSupportError("the seek read nothing") }
            return Array(buffer.prefix(read))
        }
        #expect(!sought.isEmpty && sought == Array(Self.bytes[15_000..<(15_000 + sought.count)]))
        let requests = server.parsedRequests, times = arrivals.value
        #expect(requests.count == 3, "\(requests.map(\.fields))")
        #expect(requests.last?.fields["range"]?.hasPrefix("bytes=15000-") == true, "\(requests.map(\.fields))")
        if times.count == 3 {
            #expect(times[2].timeIntervalSince(times[1]) >= 0.95, "\(times[2].timeIntervalSince(times[1]))")
        }
    }

    /// A source closed while it waits out a `Retry-After` ends its open at once, and asks the
    /// server nothing more.
    @Test(arguments: transports)
    func aCloseDuringTheWaitEndsItAtOnce(transport: HTTPDataSource.Transport) async throws {
        let server = try ScriptedHTTPServer { _ in Self.unavailable(retryAfter: "20") }
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/blob")!
        let (outcome, seconds) = try await blocking { () -> (Result<BlobSourceDescription, BlobStreamError>?, TimeInterval) in
            let source = HTTPDataSource(url: url, configuration: .init(maxRetries: 3, transport: transport))
            let done = DispatchSemaphore(value: 0)
            let box = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
            source.open(at: 0) { result in
                box.value = result
                done.signal()
            }
            while server.parsedRequests.isEmpty { Thread.sleep(forTimeInterval: 0.01) }
            Thread.sleep(forTimeInterval: 0.2)
            let closed = Date()
            source.close()
            _ = done.wait(timeout: .now() + 15)
            return (box.value, Date().timeIntervalSince(closed))
        }
        guard case .failure? = outcome else {
            Issue.record("the open did not end with a failure: \(String(describing: outcome))")
            return
        }
        #expect(seconds < 5, "\(seconds)")
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(server.parsedRequests.count == 1)
    }

    /// A server that asks to come back in an hour, and a status no later request passes
    /// (404, 403), are the error at once: one request each.
    @Test(arguments: [
        (unavailable(retryAfter: "3600"), 503), (ScriptedHTTPServer.response(status: "404 Not Found"), 404),
        (ScriptedHTTPServer.response(status: "403 Forbidden"), 403), (ScriptedHTTPServer.response(status: "501 Not Implemented"), 501),
    ])
    func aFinalStatusIsNotAskedAgain(answer: [UInt8], status: Int) async throws {
        let server = try ScriptedHTTPServer { _ in answer }
        defer { server.stop() }
        let (result, _) = try await Self.read(server, transport: .automatic)
        #expect(throws: BlobStreamError.httpStatus(url: "http://127.0.0.1:\(server.port)/blob", statusCode: status)) { try result.get() }
        #expect(server.parsedRequests.count == 1)
    }

    /// `Retry-After` in seconds or as an HTTP date, counted from the answer's own `Date`;
    /// anything unreadable is no wait; a wait past 30 s, or a status that is not transient, is
    /// no retry.
    @Test func retryAfterIsReadAsSecondsOrADate() {
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "7", date: nil) == .status(code: 503, retryAfter: 7))
        #expect(HTTPTransferFailure.transient(status: 429, retryAfter: "Sun, 06 Nov 1994 08:49:57 GMT", date: date)
                == .status(code: 429, retryAfter: 20))
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "Sun, 06 Nov 1994 08:48:00 GMT", date: date)
                == .status(code: 503, retryAfter: 0))
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "soon", date: date) == .status(code: 503, retryAfter: nil))
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "-3", date: nil) == .status(code: 503, retryAfter: 0))
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "31", date: nil) == nil)
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "99999999999999999999", date: nil) == nil)
        #expect(HTTPTransferFailure.transient(status: 507, retryAfter: nil, date: nil) == .status(code: 507, retryAfter: nil))
        #expect(HTTPTransferFailure.transient(status: 505, retryAfter: nil, date: nil) == nil)
        #expect(HTTPTransferFailure.transient(status: 503, retryAfter: "Sun, 06 Nov 1994 09:49:37 GMT", date: date) == nil)
        #expect(HTTPTransferFailure.transient(status: 404, retryAfter: "1", date: nil) == nil)
        #expect(HTTPTransferFailure.transient(status: 501, retryAfter: nil, date: nil) == nil)
    }
}
