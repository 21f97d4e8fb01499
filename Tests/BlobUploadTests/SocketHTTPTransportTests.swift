@testable import BlobUpload
import BlobTestSupport
import Foundation
import Glibc
import HTTP1
import SystemCalls
import Testing

/// The `http:` transport of the tus client against a scripted server: answer framings the
/// tus servers in the other tests do not use, and a kept-alive connection the server drops.
@Suite struct SocketHTTPTransportTests {
    private func request(_ method: String, _ server: ScriptedHTTPServer) -> HTTPRequestHead {
        HTTPRequestHead(method: method, url: URL(string: "http://127.0.0.1:\(server.port)/files/x?q=1")!,
                        fields: [("Tus-Resumable", "1.0.0")])
    }

    @Test func readsChunkedAndInterimAnswers() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nX-A: 2\r\n\r\n"
                + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n",
            "HTTP/1.1 204 No Content\r\nUpload-Offset: 7\r\n\r\n",
        ]])
        let transport = SocketHTTPTransport(timeout: 5)
        let first = try await transport.send(request("GET", server), body: nil)
        #expect(first.statusCode == 200)
        #expect(first.body == Data("hello world".utf8))
        #expect(first.header("X-A") == "1, 2")
        // The same connection carries the next request.
        let second = try await transport.send(request("PATCH", server), body: Data("abc".utf8))
        #expect(second.header("upload-offset") == "7")
        #expect(server.requests.count == 2)
        #expect(server.requests[0].hasPrefix("GET /files/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n"))
        #expect(server.requests[1].contains("\r\nContent-Length: 3\r\n"))
        #expect(server.requests[1].hasSuffix("\r\n\r\nabc"))
        #expect(server.connectionCount == 1)
    }

    @Test func readsABodyDelimitedByTheEndOfTheConnection() async throws {
        let server = try ScriptedHTTPServer(connections: [
            ["HTTP/1.0 500 Oops\r\n\r\nserver exploded"],
            ["HTTP/1.1 204 No Content\r\nContent-Length: 1000\r\n\r\n"],
        ])
        let transport = SocketHTTPTransport(timeout: 5)
        let reply = try await transport.send(request("GET", server), body: nil)
        #expect(reply.statusCode == 500)
        #expect(reply.message == "server exploded")
        // HTTP/1.0 without keep-alive: the next request needs a new connection.
        let next = try await transport.send(request("HEAD", server), body: nil)
        #expect(next.statusCode == 204)
        #expect(server.connectionCount == 2)
    }

    /// The server closes a kept-alive connection while it is idle: the next request is sent
    /// again on a new connection, without the caller noticing.
    @Test func resendsOnceWhenAnIdleConnectionWasClosed() async throws {
        let server = try ScriptedHTTPServer(connections: [
            ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
            ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"],
        ])
        let transport = SocketHTTPTransport(timeout: 5)
        #expect(try await transport.send(request("GET", server), body: nil).body == Data("ok".utf8))
        let reply = try await transport.send(request("GET", server), body: nil)
        #expect(reply.body == Data("again".utf8))
        #expect(server.connectionCount == 2)
    }

    /// A POST is never sent twice, so a kept-alive connection the server closed while it was
    /// idle must not be taken for it: the close is seen before the request goes out.
    @Test func aPostDoesNotTakeAnIdleConnectionTheServerClosed() async throws {
        let server = try ScriptedHTTPServer(connections: [
            ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
            ["HTTP/1.1 201 Created\r\nLocation: /files/y\r\nContent-Length: 0\r\n\r\n"],
        ])
        let transport = SocketHTTPTransport(timeout: 5)
        #expect(try await transport.send(request("GET", server), body: nil).body == Data("ok".utf8))
        try await Task.sleep(for: .milliseconds(300))
        let created = try await transport.send(request("POST", server), body: nil)
        #expect(created.statusCode == 201)
        #expect(server.connectionCount == 2)
    }

    /// Bytes the server sends on an idle kept-alive connection (here a second, unasked-for
    /// answer) are no answer to the next request: that connection is dropped, not read.
    @Test func bytesThatArriveOnAnIdleConnectionAnswerNothing() async throws {
        let (listener, port) = try LoopbackSocket.listening()
        // Only shut down here, to end a waiting accept: the thread closes it, once it no longer
        // calls accept (a closed number may be reused by another test's listener meanwhile).
        defer { shutdown(listener, Int32(SHUT_RDWR)) }
        Thread.detachNewThread {
            defer { close(listener) }
            let first = accept(listener, nil, nil)
            guard first >= 0 else { return }
            defer { close(first) }
            Self.readHead(first)
            Self.sendAll(first, "HTTP/1.1 204 No Content\r\nUpload-Offset: 3\r\n\r\n")
            usleep(200_000)
            Self.sendAll(first, "HTTP/1.1 204 No Content\r\nUpload-Offset: 999\r\n\r\n")
            let second = accept(listener, nil, nil)
            guard second >= 0 else { return }
            defer { close(second) }
            Self.readHead(second)
            Self.sendAll(second, "HTTP/1.1 204 No Content\r\nUpload-Offset: 6\r\n\r\n")
            usleep(500_000)
        }
        let url = URL(string: "http://127.0.0.1:\(port)/files/x")!
        let transport = SocketHTTPTransport(timeout: 5)
        let first = try await transport.send(HTTPRequestHead(method: "HEAD", url: url, fields: []), body: nil)
        #expect(first.header("upload-offset") == "3")
        try await Task.sleep(for: .milliseconds(500))
        let second = try await transport.send(HTTPRequestHead(method: "HEAD", url: url, fields: []), body: nil)
        #expect(second.header("upload-offset") == "6")
    }

    /// A request on a kept-alive connection that times out is not sent again as if the
    /// connection had gone stale: the server may still be working on the first one.
    @Test func aTimedOutRequestIsNotSentAgain() async throws {
        let (listener, port) = try LoopbackSocket.listening()
        // Only shut down here, to end a waiting accept: the thread closes it, once it no longer
        // calls accept (a closed number may be reused by another test's listener meanwhile).
        defer { shutdown(listener, Int32(SHUT_RDWR)) }
        let connections = LockedValue(0)
        Thread.detachNewThread {
            defer { close(listener) }
            let first = accept(listener, nil, nil)
            guard first >= 0 else { return }
            connections.withLock { $0 += 1 }
            defer { close(first) }
            Self.readHead(first)
            Self.sendAll(first, "HTTP/1.1 204 No Content\r\nUpload-Offset: 3\r\n\r\n")
            Self.readHead(first)
            // No answer to the second request; a second connection would get one.
            let second = accept(listener, nil, nil)
            guard second >= 0 else { return }
            connections.withLock { $0 += 1 }
            Self.readHead(second)
            Self.sendAll(second, "HTTP/1.1 204 No Content\r\nUpload-Offset: 6\r\n\r\n")
            close(second)
        }
        let url = URL(string: "http://127.0.0.1:\(port)/files/x")!
        let transport = SocketHTTPTransport(timeout: 1)
        _ = try await transport.send(HTTPRequestHead(method: "HEAD", url: url, fields: []), body: nil)
        await #expect {
            _ = try await transport.send(HTTPRequestHead(method: "HEAD", url: url, fields: []), body: nil)
        } throws: { error in
            guard case .network(_, _, _, URLError.Code.timedOut.rawValue)? = error as? BlobUploadError else {
                Issue.record("expected a time-out, got \(error)")
                return false
            }
            return true
        }
        #expect(connections.withLock { $0 } == 1)
    }

    /// Requests of one transport (of one tus client) run side by side: cancelling one is not
    /// held up by another that waits for a slow server.
    @Test func aCancelledRequestDoesNotWaitForAnotherOne() async throws {
        try TestServers.requireNginx()
        try TestServers.requireStallServer()
        let transport = SocketHTTPTransport(timeout: 60)
        let stalled = Task {
            try await transport.send(HTTPRequestHead(method: "HEAD", url: TestServers.stallForeverURL(), fields: []), body: nil)
        }
        defer { stalled.cancel() }
        try await Task.sleep(for: .milliseconds(200))
        let cancelled = Task {
            try await transport.send(HTTPRequestHead(method: "HEAD", url: TestServers.stallForeverURL(), fields: []), body: nil)
        }
        try await Task.sleep(for: .milliseconds(200))
        cancelled.cancel()
        await #expect(throws: BlobUploadError.cancelled) { _ = try await cancelled.value }
        let finished = LockedValue(false)
        Task {
            _ = try? await stalled.value
            finished.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(!finished.withLock { $0 }, "the first request still waits for its answer")
    }

    /// A request lets go of its connection before pooling it: a cancellation of that request
    /// that comes late (its task had not resumed yet) must not cancel the request of another
    /// upload that took the connection from the pool meanwhile.
    @Test func aLateCancellationDoesNotReachAPooledConnection() {
        let call = HTTP1Cancellation()
        let connection = HTTP1Connection()
        #expect(call.watch(connection))
        call.unwatch(connection)
        call.cancel()
        #expect(!connection.isCancelled)
        let watched = HTTP1Connection()
        let other = HTTP1Cancellation()
        #expect(other.watch(watched))
        other.cancel()
        #expect(watched.isCancelled, "a connection in use is still cancelled")
    }

    private static func readHead(_ fd: Int32) {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while !bytes.suffix(4).elementsEqual([13, 10, 13, 10]), recv(fd, &byte, 1, 0) == 1 {
            bytes.append(byte)
        }
    }

    private static func sendAll(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    @Test func refusesARedirectOfABody() async throws {
        let server = try ScriptedHTTPServer(connections: [
            ["HTTP/1.1 307 Temporary Redirect\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"],
        ])
        let patch = request("PATCH", server)
        await #expect(throws: BlobUploadError.redirectRefused(
            method: "PATCH", url: patch.url.absoluteString, statusCode: 307,
            location: "http://127.0.0.1:\(server.port)/elsewhere")) {
            _ = try await SocketHTTPTransport(timeout: 5).send(patch, body: Data("x".utf8))
        }
    }

    /// The server answers 413 after the head of a PATCH and closes without reading the 16 MiB
    /// body: the client's send breaks, but the answer is what it reports — not a network
    /// error, which the tus client would retry.
    @Test func anAnswerBeforeTheBodyIsReportedDespiteTheBrokenSend() async throws {
        let server = try ScriptedHTTPServer(
            connections: [["HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!"]],
            readsBodies: false)
        let reply = try await SocketHTTPTransport(timeout: 5).send(request("PATCH", server), body: Data(count: 16 << 20))
        #expect(reply.statusCode == 413)
        #expect(reply.message == "too big!")
    }

    @Test func chunkDataWithoutItsCRLFIsMalformed() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n",
        ]])
        await #expect {
            _ = try await SocketHTTPTransport(timeout: 5).send(request("GET", server), body: nil)
        } throws: { error in
            guard case .malformedAnswer(let operation, let url, let reason)? = error as? BlobUploadError else { return false }
            return operation == .tus(method: "GET") && url.hasSuffix("/files/x?q=1") && reason.contains("not followed by CRLF")
        }
    }

    @Test func aMalformedAnswerIsNoValidHTTP() async throws {
        let server = try ScriptedHTTPServer(connections: [["SMTP ready\r\n\r\n"]])
        await #expect {
            _ = try await SocketHTTPTransport(timeout: 5).send(request("GET", server), body: nil)
        } throws: { error in
            guard case .malformedAnswer(_, let url, let reason)? = error as? BlobUploadError else { return false }
            return url.hasSuffix("/files/x?q=1") && reason.contains("malformed status line")
        }
    }

    /// URLSession's `timeoutIntervalForRequest` may say "no limit" in several ways, or be
    /// huge; none of them may trap in the conversions for `poll` and `SO_RCVTIMEO`.
    @Test(arguments: [0, -1, TimeInterval.infinity, .nan, .greatestFiniteMagnitude, 1e12])
    func anyTimeoutIsUsable(timeout: TimeInterval) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]])
        let reply = try await SocketHTTPTransport(timeout: timeout).send(request("GET", server), body: nil)
        #expect(reply.body == Data("ok".utf8))
        let wait = HTTP1Wait.boundedSeconds(timeout)
        #expect(wait >= 0.001 && wait <= HTTP1Wait.longestWait)
        if timeout <= 0 || !timeout.isFinite || timeout > HTTP1Wait.longestWait {
            #expect(wait == HTTP1Wait.longestWait)
        }
    }

    @Test func aTinyTimeoutBecomesOneMillisecond() {
        #expect(HTTP1Wait.boundedSeconds(1e-9) == 0.001)
        #expect(HTTP1Wait.boundedSeconds(2.5) == 2.5)
    }

    @Test func nothingListeningIsANetworkError() async throws {
        let down = try RefusingPort()
        let url = HTTPRequestHead(method: "GET", url: URL(string: "http://127.0.0.1:\(down.port)/files/x")!, fields: [])
        await #expect {
            _ = try await SocketHTTPTransport(timeout: 5).send(url, body: nil)
        } throws: { error in
            guard case .network(_, _, _, URLError.Code.cannotConnectToHost.rawValue)? = error as? BlobUploadError else {
                return false
            }
            return true
        }
    }
}
