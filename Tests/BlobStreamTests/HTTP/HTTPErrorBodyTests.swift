import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// An error status's body says why (an expired signed link, a missing key): the HTTP source's
/// error carries what it says in one line, on both transports, reading no more than the start
/// of the body and never waiting on it longer than on any body.
@Suite struct HTTPErrorBodyTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    /// Opens a source on a server that answers every request with `answer`.
    static func open(_ answer: [UInt8], transport: HTTPDataSource.Transport) async throws -> (BlobStreamError?, String) {
        let (error, url, _) = try await open(ScriptedHTTPServer { _ in answer }, transport: transport)
        return (error, url)
    }

    /// Opens a source on `server`, which it stops; the error, the URL and the seconds the open took.
    static func open(
        _ server: ScriptedHTTPServer, transport: HTTPDataSource.Transport, minimumSpeed: MinimumSpeed = .standard,
        idleTimeout: TimeInterval = 1
    ) async throws -> (BlobStreamError?, String, TimeInterval) {
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/blob?X-Amz-Signature=abc"
        let (error, seconds) = try await blocking { () -> (BlobStreamError?, TimeInterval) in
            let started = Date()
            let source = HTTPDataSource(url: URL(string: url)!, configuration: .init(
                requestTimeout: 5, idleTimeout: idleTimeout, minimumSpeed: minimumSpeed, maxRetries: 0, transport: transport))
            defer { source.close() }
            let result = try SourceReader(source: source, timeout: 60).open()
            guard case .failure(let error) = result else { return (nil, Date().timeIntervalSince(started)) }
            return (error, Date().timeIntervalSince(started))
        }
        return (error, url, seconds)
    }

    /// A server that sends `head` and `atOnce` at once, then `rest` a byte each `interval` seconds.
    static func paced(_ head: String, _ atOnce: String, then rest: String, every interval: Double) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(pacing: .init(after: head.utf8.count + atOnce.utf8.count, bytes: 1, interval: interval, steps: rest.utf8.count)) { _ in
            Array((head + atOnce + rest).utf8)
        }
    }

    @Test(arguments: transports)
    func anS3ErrorDocumentIsItsCodeAndMessage(transport: HTTPDataSource.Transport) async throws {
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
            + "<Message>Request has expired</Message><RequestId>R1</RequestId></Error>"
        let (error, url) = try await Self.open(
            ScriptedHTTPServer.response(status: "403 Forbidden", fields: ["Content-Type": "application/xml"], body: Array(document.utf8)),
            transport: transport)
        #expect(error == .httpStatus(url: url, statusCode: 403, message: "AccessDenied: Request has expired"))
        #expect(error?.description == "HTTP source GET \(url): HTTP 403 Forbidden: AccessDenied: Request has expired")
    }

    @Test(arguments: transports)
    func aTextBodyIsItsFirstLine(transport: HTTPDataSource.Transport) async throws {
        let (error, url) = try await Self.open(
            ScriptedHTTPServer.response(status: "404 Not Found", body: Array("\n  no such blob: /blob\nsecond line\n".utf8)),
            transport: transport)
        #expect(error == .httpStatus(url: url, statusCode: 404, message: "no such blob: /blob"))
    }

    /// A web server's error page says no more than its status: no message.
    @Test(arguments: transports)
    func anErrorPageThatRepeatsTheStatusAddsNothing(transport: HTTPDataSource.Transport) async throws {
        let page = "<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1></body></html>"
        let (error, url) = try await Self.open(
            ScriptedHTTPServer.response(status: "404 Not Found", fields: ["Content-Type": "text/html"], body: Array(page.utf8)),
            transport: transport)
        #expect(error == .httpStatus(url: url, statusCode: 404))
    }

    /// An endless error body is read only as far as its message needs.
    @Test(arguments: transports)
    func anEndlessErrorBodyIsNotReadToItsEnd(transport: HTTPDataSource.Transport) async throws {
        let head = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 1073741824\r\n\r\n"
        let (error, url) = try await Self.open(Array(head.utf8) + Array(repeating: UInt8(ascii: "x"), count: 1 << 20), transport: transport)
        guard case .httpStatus(url, 500, let message?)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(message.count <= 201 && message.hasPrefix("xxxx"), "\(message)")
    }

    /// An error head whose body never comes is the status after the idle time-out, not a
    /// time-out and not a hang.
    @Test(arguments: transports)
    func anErrorBodyThatNeverComesIsTheStatusAlone(transport: HTTPDataSource.Transport) async throws {
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Length: 11\r\n\r\n"
        let stalled = try Self.paced(head, "Expi", then: "red now", every: 5)
        let (error, url, seconds) = try await Self.open(stalled, transport: transport)
        #expect(error == .httpStatus(url: url, statusCode: 403, message: "Expi"))
        // The source's idle time-out (1 s) ended it, not the body's end 35 s later.
        #expect(seconds < 20, "\(seconds)")
    }

    /// An error body that trickles in, never silent long enough for the idle time-out and with
    /// no minimum speed, is read for a few seconds only: the status comes with what arrived.
    @Test(arguments: transports)
    func aTricklingErrorBodyIsReadForAFewSecondsOnly(transport: HTTPDataSource.Transport) async throws {
        let head = "HTTP/1.1 403 Forbidden\r\nContent-Length: 100\r\n\r\n"
        // 49 s for the whole body.
        let trickling = try Self.paced(head, "Ex", then: String(repeating: "p", count: 98), every: 0.5)
        let (error, url, seconds) = try await Self.open(trickling, transport: transport, minimumSpeed: .off)
        guard case .httpStatus(url, 403, let message?)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("Exp") && message.count < 98, "\(message)")
        #expect(seconds < 30, "\(seconds)")
    }

    /// An error body that stalls is waited for a few seconds, not for the whole idle time-out.
    @Test(arguments: transports)
    func aStalledErrorBodyIsWaitedForAFewSecondsOnly(transport: HTTPDataSource.Transport) async throws {
        let head = "HTTP/1.1 404 Not Found\r\nContent-Length: 1000\r\n\r\n"
        let stalled = try Self.paced(head, "not found!", then: String(repeating: " ", count: 990), every: 40)
        let (error, url, seconds) = try await Self.open(stalled, transport: transport, idleTimeout: 30)
        #expect(error == .httpStatus(url: url, statusCode: 404, message: "not found!"))
        #expect(seconds < 20, "\(seconds)")
    }
}
