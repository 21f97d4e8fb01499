import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import HTTP1
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A peer that answers one byte at a time cannot hold an upload: a small answer (a tus or S3
/// reply, its head included) has a whole-answer deadline, which the trickle does not restart.
/// Each scripted server trickles one byte every 0.2 s, 25 at most (5 s), then closes: a client
/// whose wait restarts on every byte would see that close, not a time-out.
@Suite struct TrickledAnswerTests {
    /// An S3 client whose waits are 1 s, on `server`.
    static func client(_ server: ScriptedHTTPServer) throws -> S3Client {
        try S3Client(configuration: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(server.port)")!, bucket: "scripted-bucket",
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "secret"), timeout: 1))
    }

    /// Expects `error` to be the time-out of a request (not a close after the trickle), naming
    /// what it interrupted (`activity`, as "timed out …" goes on).
    static func expectTimeout(_ error: (any Error)?, activity: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let upload: BlobUploadError?
        switch error {
        case let error as S3Error:
            var last = error
            if case .retriesExhausted(_, _, _, _, _, let lastError) = error { last = lastError }
            guard case .transfer(let transfer) = last else { upload = nil; break }
            upload = transfer
        case let error as BlobUploadError: upload = error
        default: upload = nil
        }
        guard case .network(_, _, let reason, URLError.Code.timedOut.rawValue)? = upload else {
            Issue.record("expected a time-out, got \(String(describing: error))", sourceLocation: sourceLocation)
            return
        }
        #expect(reason.contains("timed out " + activity), "\(reason)", sourceLocation: sourceLocation)
    }

    /// An S3 upload of one attempt to `server` ends in a time-out before the trickle is over.
    static func expectOneAttemptTimesOut(
        _ server: ScriptedHTTPServer, activity: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        var options = S3ErrorTests.multipart
        options.maxAttempts = 1
        let error = await #expect(throws: S3Error.self, sourceLocation: sourceLocation) {
            _ = try await Self.client(server).upload(S3ErrorTests.source(), key: "k", options: options)
        }
        Self.expectTimeout(error, activity: activity, sourceLocation: sourceLocation)
        #expect(server.pacedBytes < 25, "the client waited for the whole trickle", sourceLocation: sourceLocation)
    }

    /// The issue's case: a 200 head announcing 100,000 bytes, then one byte at a time.
    @Test func anS3UploadPartAnswerTrickledTimesOut() async throws {
        let head = "HTTP/1.1 200 OK\r\nETag: \"0123456789abcdef0123456789abcdef\"\r\nContent-Length: 100000\r\n\r\n"
        let answer = head + String(repeating: " ", count: 100_000)
        let server = try ScriptedHTTPServer(
            connections: [[S3ErrorTests.created], [answer]], pacing: .init(connection: 1, after: head.utf8.count))
        defer { server.stop() }
        await Self.expectOneAttemptTimesOut(server, activity: "reading the answer")
    }

    /// A response head sent one byte at a time is bounded the same way.
    @Test func anS3AnswerHeadTrickledTimesOut() async throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created]], pacing: .init(connection: 0, after: 0))
        defer { server.stop() }
        await Self.expectOneAttemptTimesOut(server, activity: "waiting for the answer, after sending the whole request (")
    }

    /// A tus reply trickled after its status line times out within the client's time-out.
    @Test func aTusReplyTrickledTimesOut() async throws {
        let server = try ScriptedHTTPServer(connections: [[ScriptedTus.options]], pacing: .init(connection: 0, after: 17))
        defer { server.stop() }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 1
        let client = TusClient(endpoint: ScriptedTus.endpoint(server), configuration: configuration)
        let error = await #expect(throws: BlobUploadError.self) { _ = try await client.discover() }
        Self.expectTimeout(error, activity: "waiting for the answer, after sending the whole request (")
        #expect(server.pacedBytes < 25, "the client waited for the whole trickle")
    }

    /// A peer that never reads the body times the request out while it is sent, and the
    /// message counts the bytes written to the connection as such, not as bytes the server took.
    @Test func aBodyThePeerNeverReadsTimesOutWhileSent() async throws {
        // Listening, never accepting: the kernel takes what its buffers hold, then nothing.
        let (listener, port) = try LoopbackSocket.listening()
        defer { close(listener) }
        let head = HTTPRequestHead(method: "PATCH", url: URL(string: "http://127.0.0.1:\(port)/files/x")!, fields: [("Tus-Resumable", "1.0.0")])
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await SocketHTTPTransport(timeout: 1).send(head, body: Data(count: 64 << 20))
        }
        Self.expectTimeout(error, activity: "sending the request, with ")
        #expect("\(String(describing: error))".contains("bytes written to the connection (the server may have read fewer)"), "\(String(describing: error))")
    }

    /// The same for a body read while it is sent (a file's tus chunk): the count includes the
    /// body bytes written, not the head's alone.
    @Test func aProducedBodyThePeerNeverReadsCountsItsBytes() async throws {
        let (listener, port) = try LoopbackSocket.listening()
        defer { close(listener) }
        let head = HTTPRequestHead(method: "PATCH", url: URL(string: "http://127.0.0.1:\(port)/files/x")!, fields: [("Tus-Resumable", "1.0.0")])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        let pieces = UncheckedSendable(buffer)
        let body = RequestBody.produced(count: 64 << 20) {
            HTTP1ProducedBody(length: 64 << 20, buffer: pieces.value) { piece in
                piece.initializeMemory(as: UInt8.self, repeating: 7)
                return piece.count
            }
        }
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await SocketHTTPTransport(timeout: 1).send(head, requestBody: body)
        }
        guard case .network(_, _, let reason, _)? = error,
              let written = reason.split(separator: " ").drop(while: { $0 != "with" }).dropFirst().first.flatMap({ Int($0) }) else {
            Issue.record("no byte count in \(String(describing: error))")
            return
        }
        #expect(written > 100_000, "\(reason)")
    }
}

/// A value the test hands to a `@Sendable` closure that only this test's thread touches.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
