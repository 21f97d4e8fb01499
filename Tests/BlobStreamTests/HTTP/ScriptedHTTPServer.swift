import BlobTestSupport
import Foundation
import Glibc

/// A loopback HTTP/1.1 server that answers each request as a test scripts it and records what
/// it received: for answers nginx is not configured to give (a 416 in the middle of a blob, a
/// redirect to another host) and for checking which headers reached which host.
final class ScriptedHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        var target: String
        /// Header fields by lowercased name.
        var fields: [String: String]
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var received: [Request] = []
    /// Whether the accept thread closed the listener (after which `stop` must not touch it).
    private var listenerClosed = false
    private let respond: @Sendable (Request) -> [UInt8]
    private let pacing: Pacing?

    /// A server that sends slowly: the first `after` bytes of each answer at once, then `bytes`
    /// every `interval` seconds, at most `steps` times; then it closes the connection (so a
    /// client that never gives up sees a close, not a time-out).
    struct Pacing: Sendable {
        var after: Int
        var bytes: Int
        var interval: TimeInterval
        var steps: Int
    }

    /// Starts listening; `respond` returns the raw response bytes for each request, sent as
    /// `pacing` says (at once without).
    init(pacing: Pacing? = nil, respond: @escaping @Sendable (Request) -> [UInt8]) throws {
        self.respond = respond
        self.pacing = pacing
        let (listener, port) = try LoopbackSocket.listening()
        self.listener = listener
        self.port = Int(port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Every request received so far.
    var requests: [Request] { lock.withLock { received } }

    /// Stops accepting connections. Only shuts the listener down: the accept thread closes it
    /// once its `accept` has failed. Closing it here could let the thread, between two
    /// `accept` calls, accept on the same number reused by another test's listener, and answer
    /// that test's client with this server's script.
    func stop() {
        lock.withLock {
            if !listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    /// A complete response with `body` and the given extra header lines.
    static func response(status: String, fields: [String: String] = [:], body: [UInt8] = []) -> [UInt8] {
        var head = "HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { break }
            Thread { [self] in serve(connection) }.start()
        }
        lock.withLock {
            listenerClosed = true
            close(listener)
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !bytes.contains(subsequence: [13, 10, 13, 10]) {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return }
            bytes += chunk[0..<count]
        }
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = lines[0].split(separator: " ").dropFirst().first.map(String.init) ?? ""
        let request = Request(target: target, fields: fields)
        lock.withLock { received.append(request) }
        let answer = respond(request)
        guard let pacing else {
            _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            lingerUntilTheClientCloses(connection)
            return
        }
        var sent = min(pacing.after, answer.count)
        _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, sent, Int32(MSG_NOSIGNAL)) }
        for _ in 0..<pacing.steps where sent < answer.count {
            Thread.sleep(forTimeInterval: pacing.interval)
            let count = min(pacing.bytes, answer.count - sent)
            let done = answer.withUnsafeBytes { send(connection, $0.baseAddress! + sent, count, Int32(MSG_NOSIGNAL)) }
            guard done == count else { return }
            sent += count
        }
        if sent == answer.count { lingerUntilTheClientCloses(connection) }
    }

    /// Ends the answer with a FIN and reads (and drops) what the client still sends until it
    /// closes, for at most 5 s. Closing with a request body still unread would make the kernel
    /// answer with a reset, and the client could then report "connection reset" instead of
    /// the answer it was sent: a race a test must not depend on.
    private func lingerUntilTheClientCloses(_ connection: Int32) {
        shutdown(connection, Int32(SHUT_WR))
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sink = [UInt8](repeating: 0, count: 4096)
        while recv(connection, &sink, sink.count, 0) > 0 {}
    }
}

private extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard count >= subsequence.count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<$0 + subsequence.count]) == subsequence }
    }
}
