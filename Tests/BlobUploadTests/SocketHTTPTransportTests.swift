@testable import BlobUpload
import BlobTestSupport
import Foundation
import Glibc
import HTTP1
import Synchronization
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
        let connections = Mutex(0)
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
        let finished = Mutex(false)
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
            guard case .protocolViolation(let operation, let url, let reason)? = error as? BlobUploadError else { return false }
            return operation == .tus(method: "GET") && url.hasSuffix("/files/x?q=1") && reason.contains("not followed by CRLF")
        }
    }

    @Test func aMalformedAnswerIsAProtocolViolation() async throws {
        let server = try ScriptedHTTPServer(connections: [["SMTP ready\r\n\r\n"]])
        await #expect {
            _ = try await SocketHTTPTransport(timeout: 5).send(request("GET", server), body: nil)
        } throws: { error in
            guard case .protocolViolation(_, let url, let reason)? = error as? BlobUploadError else { return false }
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

/// A one-thread HTTP server on 127.0.0.1 that answers the requests of its n-th connection
/// (after their head only, unless `readsBodies`) with the n-th list of raw answers, in
/// order, then closes that connection — or, with
/// `drainBeforeClosing`, half-closes it and discards what the client still sends until it
/// closes too, so that an answer sent before the request body was read is not lost to a reset.
/// With a `trickle`, the answers of one connection go out one byte at a time.
final class ScriptedHTTPServer: Sendable {
    /// A peer that answers one byte at a time: on connection `connection` (counted from 0),
    /// the first `after` bytes of each answer at once, then one byte every `interval` seconds,
    /// at most `budget` of them; then it closes the connection (so a client that never gives up
    /// sees a close, not a time-out).
    struct Trickle: Sendable {
        var connection: Int
        var after: Int
        var interval: TimeInterval = 0.2
        var budget = 25
    }

    let port: UInt16
    private let listener: Int32
    private let log = Log()

    private final class Log: Sendable {
        let state = Mutex<(requests: [String], connections: Int, listenerClosed: Bool, serving: Int32?)>(([], 0, false, nil))
        let trickled = Mutex(0)
    }

    var requests: [String] { log.state.withLock { $0.requests } }
    /// The bytes a ``Trickle`` sent one at a time, before the client went away or the budget ran out.
    var trickledBytes: Int { log.trickled.withLock { $0 } }
    var connectionCount: Int { log.state.withLock { $0.connections } }

    /// - Parameter readsChunkedBodies: Reads a chunked request body to its last chunk before
    ///   answering (by default the answer follows the head of a chunked request at once).
    init(
        connections: [[String]], drainBeforeClosing: Bool = false, readsBodies: Bool = true, readsChunkedBodies: Bool = false,
        trickle: Trickle? = nil
    ) throws {
        let (fd, port) = try LoopbackSocket.listening()
        listener = fd
        self.port = port
        let log = self.log
        Thread.detachNewThread {
            // This thread closes the listener, once it no longer calls `accept`: see `stop`.
            defer {
                log.state.withLock { state in
                    state.listenerClosed = true
                    close(fd)
                }
            }
            for (index, answers) in connections.enumerated() {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return }
                log.state.withLock { state in
                    state.connections += 1
                    state.serving = connection
                }
                for answer in answers {
                    guard let request = Self.readRequest(connection, withBody: readsBodies, chunked: readsChunkedBodies) else { break }
                    log.state.withLock { $0.requests.append(request) }
                    if let trickle, trickle.connection == index {
                        Self.trickle(Array(answer.utf8), on: connection, as: trickle, log: log)
                        continue
                    }
                    _ = answer.utf8CString.withUnsafeBufferPointer {
                        send(connection, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL))
                    }
                }
                if drainBeforeClosing {
                    Self.drain(connection)
                }
                log.state.withLock { state in
                    state.serving = nil
                    close(connection)
                }
            }
        }
    }

    deinit {
        stop()
    }

    /// Stops accepting connections, and ends the one being served. Only shuts them down,
    /// while the serving thread has not closed them: a `close` here could let that thread,
    /// between two `accept` calls, accept on the same number reused by another test's listener
    /// and answer that test's client with this server's script (a tus creation answered without
    /// a `Location`). A connection left open would stay in the client's pool, kept alive by this
    /// server's thread, and a later server on the same port number would find its client
    /// talking to this one.
    func stop() {
        log.state.withLock { state in
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            if let serving = state.serving { shutdown(serving, Int32(SHUT_RDWR)) }
        }
    }

    /// Sends `answer` as `trickle` says, until the client goes away.
    private static func trickle(_ answer: [UInt8], on fd: Int32, as trickle: Trickle, log: Log) {
        let start = min(trickle.after, answer.count)
        _ = answer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, start, Int32(MSG_NOSIGNAL)) }
        for var byte in answer[start...].prefix(trickle.budget) {
            Thread.sleep(forTimeInterval: trickle.interval)
            guard Glibc.send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            log.trickled.withLock { $0 += 1 }
        }
    }

    /// Half-closes `fd` and reads until the client closes its side (or 10 s passed).
    private static func drain(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
    }

    /// Reads one request (head and, `withBody`, its `Content-Length` body); `nil` when the
    /// client went away.
    private static func readRequest(_ fd: Int32, withBody: Bool, chunked: Bool) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while !bytes.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            bytes.append(byte)
        }
        let head = String(decoding: bytes, as: UTF8.self)
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        for _ in 0..<(withBody ? length : 0) {
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            bytes.append(byte)
        }
        if chunked, head.lowercased().contains("transfer-encoding: chunked") {
            // To the last chunk and the empty trailer (no chunk of the tests holds "0\r\n\r\n").
            while !bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)) {
                guard recv(fd, &byte, 1, 0) == 1 else { return nil }
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
