@testable import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// The issue's bad-input list on the tus path: a scripted server answers the tus client's
/// `OPTIONS` with bytes that break HTTP/1.1. Each answer is a typed error that names the URL,
/// the same refusals the HTTP source makes (see HTTPHostileServerTests), never a crash and
/// never an answer taken as it came.
@Suite struct TusHostileServerTests {
    /// Sends `answer` to the tus client's discovery and returns what it threw, and the endpoint.
    static func discover(_ answer: String) async throws -> (BlobUploadError?, URL) {
        let server = try ScriptedHTTPServer(connections: [[answer]])
        defer { server.stop() }
        let endpoint = ScriptedTus.endpoint(server)
        do {
            _ = try await TusClient(endpoint: endpoint).discover()
            return (nil, endpoint)
        } catch {
            return (error, endpoint)
        }
    }

    /// Expects a malformed answer to tus's `OPTIONS` naming `url`, whose reason mentions every
    /// one of `words`, and whose message blames HTTP/1.1, not tus.
    static func expectViolation(_ error: BlobUploadError?, _ url: URL, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .malformedAnswer(.tus(method: "OPTIONS"), let failedURL, let reason)? = error else {
            Issue.record("expected malformedAnswer, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(failedURL == url.absoluteString, sourceLocation: sourceLocation)
        ProtocolNamingTests.expect("\(error!)", names: ["tus OPTIONS", "no valid HTTP/1.1"], notNaming: ["tus protocol", "S3"], sourceLocation: sourceLocation)
        for word in words { #expect(reason.contains(word), "\(reason)", sourceLocation: sourceLocation) }
    }

    static let tusFields = "Tus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\n"

    @Test(arguments: ["HTTP/1.1 abc OK", "HELLO", "HTTP/1.1 200 OK\r\nno colon here"])
    func malformedHeadIsRefused(statusLine: String) async throws {
        let (error, url) = try await Self.discover("\(statusLine)\r\nContent-Length: 0\r\n\r\n")
        Self.expectViolation(error, url, mentioning: ["malformed"])
    }

    @Test func headerOver64KiBIsRefused() async throws {
        let (error, url) = try await Self.discover("HTTP/1.1 204 No Content\r\n\(Self.tusFields)X-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n")
        Self.expectViolation(error, url, mentioning: ["65536"])
    }

    @Test func moreThan100HeaderFieldsAreRefused() async throws {
        let many = (0..<101).map { "X-Field-\($0): \($0)\r\n" }.joined()
        let (error, url) = try await Self.discover("HTTP/1.1 204 No Content\r\n\(Self.tusFields)\(many)\r\n")
        Self.expectViolation(error, url, mentioning: ["header fields"])
    }

    /// Read until the close, as the transport once did, each of these passed a cut or mixed
    /// body off as whole.
    @Test(arguments: ["-5", "abc", "+5", "5, 4", "99999999999999999999"])
    func unusableContentLengthIsRefused(value: String) async throws {
        let (error, url) = try await Self.discover("HTTP/1.1 200 OK\r\n\(Self.tusFields)Content-Length: \(value)\r\n\r\nhello")
        Self.expectViolation(error, url, mentioning: ["Content-Length"])
    }

    @Test func transferEncodingWithContentLengthIsRefused() async throws {
        let (error, url) = try await Self.discover(
            "HTTP/1.1 200 OK\r\n\(Self.tusFields)Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        Self.expectViolation(error, url, mentioning: ["Transfer-Encoding", "Content-Length"])
    }

    @Test(arguments: ["zz", "-0", "+10", "FFFFFFFFFFFFFFFFFF", "8000000000000000"])
    func chunkSizeThatIsNoHexInt64IsRefused(size: String) async throws {
        let (error, url) = try await Self.discover(
            "HTTP/1.1 200 OK\r\n\(Self.tusFields)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n\(size)\r\nabc\r\n0\r\n\r\n")
        Self.expectViolation(error, url, mentioning: ["chunk"])
    }

    @Test func peerThatClosesMidHeadIsANetworkErrorNamingWhereItStopped() async throws {
        let (error, url) = try await Self.discover("HTTP/1.1 204 No Content\r\nTus-Resu")
        guard case .network("OPTIONS", url.absoluteString, let reason, _)? = error else {
            Issue.record("expected a network error, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("after 33 bytes"), "\(reason)")
    }

    @Test func peerThatClosesMidBodyIsANetworkErrorNamingWhereItStopped() async throws {
        let (error, url) = try await Self.discover("HTTP/1.1 200 OK\r\n\(Self.tusFields)Content-Length: 100\r\n\r\nonly ten b")
        guard case .network("OPTIONS", url.absoluteString, let reason, _)? = error else {
            Issue.record("expected a network error, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("after 10 body bytes"), "\(reason)")
    }

    /// A server that answers a PATCH with success before it read the body, and closes, has
    /// not received those bytes: a 2xx read after a failed send is never taken as their
    /// confirmation (an early refusal, 3xx and up, still explains the failure).
    @Test func anEarlySuccessBeforeThePatchBodyWasSentConfirmsNothing() async throws {
        let size = 8 << 20
        let early = ScriptedTus.patched(Int64(size))
        let server = try ScriptedHTTPServer(
            connections: [[ScriptedTus.options, ScriptedTus.created("/files/early")], [early]], readsBodies: false)
        defer { server.stop() }
        var options = ScriptedTus.options(chunkSize: size)
        options.retry.maxAttempts = 1
        await #expect(throws: BlobUploadError.self) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server), transport: .automatic)
                .upload(ScriptedTus.source(size), options: options)
        }
    }
}
