import Foundation
import Glibc
import SystemCalls

/// A loopback HTTP/1.1 server whose answers a test scripts, recording every request it
/// received: for the answers nginx, tuspyserver and moto are not configured to give (a 416 in
/// the middle of a blob, a redirect to another host, a trickled head, a lying status) and for
/// checking which fields reached which host.
///
/// Two ways to script it:
/// - ``init(connections:drainBeforeClosing:readsBodies:readsChunkedBodies:pacing:)``: the n-th
///   connection's requests get the n-th list of raw answers, in order, one connection at a
///   time; then that connection closes. After the last list the server accepts nothing more.
/// - ``init(pacing:respond:)``: every connection, served at once on its own thread, gets one
///   request and the answer `respond` gives it, then the server lingers until the client closes.
public final class ScriptedHTTPServer: Sendable {
    /// A request as received: its raw text and the parts tests ask about.
    public struct Request: Sendable {
        /// The head (and the body that was read) as received.
        public let raw: String
        /// The request target, e.g. `/files/abc?q=1`.
        public let target: String
        /// Header fields by lowercased name.
        public let fields: [String: String]

        public init(_ raw: String) {
            self.raw = raw
            let lines = raw.components(separatedBy: "\r\n")
            target = lines[0].split(separator: " ").dropFirst().first.map(String.init) ?? ""
            var fields: [String: String] = [:]
            for line in lines.dropFirst() {
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":") else { continue }
                fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            self.fields = fields
        }
    }

    /// An answer sent slowly: on connection `connection` (counted from 0; `nil`: every one), the
    /// first `after` bytes at once, then `bytes` every `interval` seconds, at most `steps`
    /// times; then the connection closes, so a client that never gives up sees a close, not a
    /// time-out.
    public struct Pacing: Sendable {
        public var connection: Int?
        public var after: Int
        public var bytes: Int
        public var interval: TimeInterval
        public var steps: Int

        public init(connection: Int? = nil, after: Int, bytes: Int = 1, interval: TimeInterval = 0.2, steps: Int = 25) {
            self.connection = connection
            self.after = after
            self.bytes = bytes
            self.interval = interval
            self.steps = steps
        }
    }

    /// The port it listens on.
    public let port: UInt16
    /// The address it listens on: 127.0.0.1 unless it was given another.
    public let address: LoopbackAddress
    private let listener: Int32
    private let log = Log()

    private struct State {
        var requests: [String] = []
        var connections = 0
        /// Connections that closed before a whole request.
        var silentConnections = 0
        var listenerClosed = false
        var serving: Set<Int32> = []
        var pacedBytes = 0
    }

    private final class Log: Sendable {
        let state = LockedValue(State())
    }

    /// Every request received so far, as received.
    public var requests: [String] { log.state.withLock { $0.requests } }
    /// The same, parsed.
    public var parsedRequests: [Request] { requests.map(Request.init) }
    /// How many connections were accepted.
    public var connectionCount: Int { log.state.withLock { $0.connections } }

    /// A path prefix unique to this server (`/<uuid>`): see ``wasReached``.
    public let ownPath = "/" + UUID().uuidString.lowercased()

    /// `http://<address>:<port>/<uuid><path>`: a URL whose requests ``wasReached`` counts.
    public func url(_ path: String) -> URL {
        URL(string: "http://\(address.text):\(port)\(ownPath)\(path)")!
    }

    /// Whether a request for one of this server's ``url(_:)`` came, or a connection sent no
    /// whole request: what a test asserts is false when nothing may reach the server. Not
    /// ``connectionCount``: another test's client that still retries a port of a server it
    /// used, which the kernel has since given to this one, connects too, and asks for its own
    /// path. A server that nothing may reach listens on an address of its own
    /// (``LoopbackAddress/random()``), where no such client connects at all.
    public var wasReached: Bool {
        log.state.withLock { state in
            state.silentConnections > 0 || state.requests.contains { Request($0).target.hasPrefix(ownPath) }
        }
    }
    /// The bytes sent at the ``Pacing`` pace (after its first `after`), before the client went
    /// away or the steps ran out.
    public var pacedBytes: Int { log.state.withLock { $0.pacedBytes } }

    /// Scripted connections: see the type's documentation.
    /// - Parameters:
    ///   - drainBeforeClosing: Half-closes each connection and discards what the client still
    ///     sends until it closes too, so an answer sent before the request body was read is not
    ///     lost to a reset.
    ///   - readsBodies: Reads a `Content-Length` body before answering (else the head only).
    ///   - readsChunkedBodies: Reads a chunked body to its last chunk before answering (by
    ///     default the answer follows the head of a chunked request at once).
    ///   - address: Where it listens: 127.0.0.1, or for a server nothing may reach
    ///     (``wasReached``) an address of its own, ``LoopbackAddress/random()``.
    public init(
        connections: [[String]], drainBeforeClosing: Bool = false, readsBodies: Bool = true, readsChunkedBodies: Bool = false,
        pacing: Pacing? = nil, address: LoopbackAddress = .standard
    ) throws {
        self.address = address
        (listener, port) = try LoopbackSocket.listening(on: address)
        let log = self.log, listener = self.listener
        Thread.detachNewThread {
            defer { Self.closeListener(listener, log) }
            for (index, answers) in connections.enumerated() {
                guard let connection = Self.accept(listener, log) else { return }
                for (number, answer) in answers.enumerated() {
                    guard let request = Self.readRequest(connection, withBody: readsBodies, chunked: readsChunkedBodies) else {
                        if number == 0 { log.state.withLock { $0.silentConnections += 1 } }
                        break
                    }
                    log.state.withLock { $0.requests.append(request) }
                    let paced = pacing.flatMap { $0.connection == nil || $0.connection == index ? $0 : nil }
                    guard Self.send(Array(answer.utf8), on: connection, pacing: paced, log) else { break }
                }
                if drainBeforeClosing { Self.drain(connection, seconds: 10) }
                Self.close(connection, log)
            }
        }
    }

    /// Answers every connection's one request with what `respond` returns: see the type's
    /// documentation. The request's body is not read.
    public init(pacing: Pacing? = nil, address: LoopbackAddress = .standard, respond: @escaping @Sendable (Request) -> [UInt8]) throws {
        self.address = address
        (listener, port) = try LoopbackSocket.listening(on: address)
        let log = self.log, listener = self.listener
        Thread.detachNewThread {
            defer { Self.closeListener(listener, log) }
            var index = 0
            while let connection = Self.accept(listener, log) {
                let paced = pacing.flatMap { $0.connection == nil || $0.connection == index ? $0 : nil }
                index += 1
                Thread.detachNewThread {
                    defer { Self.close(connection, log) }
                    guard let request = Self.readRequest(connection, withBody: false, chunked: false) else {
                        log.state.withLock { $0.silentConnections += 1 }
                        return
                    }
                    log.state.withLock { $0.requests.append(request) }
                    if Self.send(respond(Request(request)), on: connection, pacing: paced, log) {
                        Self.drain(connection, seconds: 5)
                    }
                }
            }
        }
    }

    deinit {
        stop()
    }

    /// Stops accepting connections, and ends the ones being served. Only shuts them down, while
    /// the serving threads have not closed them: a `close` here could let a thread, between two
    /// `accept` calls, accept on the same number reused by another test's listener and answer
    /// that test's client with this server's script. A connection left open would stay in the
    /// client's pool, and a later server on the same port number would find its client talking
    /// to this one.
    public func stop() {
        log.state.withLock { state in
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for connection in state.serving { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    /// A complete answer with `body` and the given extra fields, closing the connection.
    public static func response(status: String, fields: [String: String] = [:], body: [UInt8] = []) -> [UInt8] {
        var head = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    // MARK: Serving

    private static func accept(_ listener: Int32, _ log: Log) -> Int32? {
        let connection = Glibc.accept(listener, nil, nil)
        guard connection >= 0 else { return nil }
        log.state.withLock { state in
            state.connections += 1
            state.serving.insert(connection)
        }
        return connection
    }

    private static func close(_ connection: Int32, _ log: Log) {
        log.state.withLock { state in
            state.serving.remove(connection)
            Glibc.close(connection)
        }
    }

    /// The accept thread closes the listener, once it no longer calls `accept`: see `stop`.
    private static func closeListener(_ listener: Int32, _ log: Log) {
        log.state.withLock { state in
            state.listenerClosed = true
            Glibc.close(listener)
        }
    }

    /// Sends `answer`, at `pacing`'s pace if any; returns whether all of it went out.
    private static func send(_ answer: [UInt8], on fd: Int32, pacing: Pacing?, _ log: Log) -> Bool {
        let first = min(pacing?.after ?? answer.count, answer.count)
        var sent = answer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, first, Int32(MSG_NOSIGNAL)) }
        guard sent == first else { return false }
        guard let pacing else { return true }
        for _ in 0..<pacing.steps where sent < answer.count {
            Thread.sleep(forTimeInterval: pacing.interval)
            let count = min(pacing.bytes, answer.count - sent)
            let done = answer.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, count, Int32(MSG_NOSIGNAL)) }
            guard done == count else { return false }
            sent += count
            log.state.withLock { $0.pacedBytes += count }
        }
        return sent == answer.count
    }

    /// Half-closes `fd` and reads (and drops) what the client still sends until it closes, for
    /// at most `seconds`. Closing with a request body still unread would make the kernel answer
    /// with a reset, and the client could report "connection reset" instead of the answer it
    /// was sent: a race a test must not depend on.
    private static func drain(_ fd: Int32, seconds: Int) {
        shutdown(fd, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
    }

    /// Reads one request (head and, `withBody`, its `Content-Length` body; with `chunked`, a
    /// chunked body to its last chunk); `nil` when the client went away.
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
