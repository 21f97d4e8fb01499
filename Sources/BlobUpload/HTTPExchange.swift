import Foundation

/// One HTTP/1.1 request and its answer on a ``SocketConnection``: writes the head and body,
/// reads the status, header fields and body (by `Content-Length`, chunked, or to the end of
/// the connection), and says whether the connection can carry another request.
struct HTTPExchange {
    private let connection: SocketConnection
    private let method: String
    /// Bytes received but not yet parsed.
    private var pending: [UInt8] = []
    /// Whether any byte of an answer arrived (a request that failed before may be repeated).
    private(set) var receivedAnswer = false
    /// Whether the answer was read completely and the server keeps the connection open.
    private(set) var reusable = false

    /// Answer bodies are kept up to this size; tus answers are empty, error pages short.
    static let maxKeptBody = 1 << 20

    init(connection: SocketConnection, method: String) {
        self.connection = connection
        self.method = method
    }

    mutating func run(head: Data, body: Data?, url: URL) throws(SocketError) -> HTTPReply {
        do {
            try send(head)
            if let body, !body.isEmpty {
                try send(body)
            }
        } catch {
            // A server may answer before it read the whole request (413, 401, 409) and close
            // the connection, which breaks the send: its answer, if it came, says more than
            // the broken pipe, and must not be taken for a transient failure. A send that
            // timed out has a server that stopped reading, not one that closed: no waiting
            // for an answer then.
            guard error.code != .timedOut, let reply = try? readAnswer(url: url) else { throw error }
            reusable = false
            return reply
        }
        return try readAnswer(url: url)
    }

    /// Reads the answer: interim ones skipped, then the status, header fields and body.
    private mutating func readAnswer(url: URL) throws(SocketError) -> HTTPReply {
        var status: Int
        var version: String
        var headers: [String: String]
        repeat {
            (version, status, headers) = try readHead()
        } while (100..<200).contains(status)
        let body = try readBody(status: status, headers: headers)
        let connectionField = headers["connection"]?.lowercased() ?? ""
        reusable = reusable && !connectionField.contains("close")
            && (version != "HTTP/1.0" || connectionField.contains("keep-alive"))
        return HTTPReply(method: method, url: url, statusCode: status, headers: headers, body: body)
    }

    private func send(_ data: Data) throws(SocketError) {
        var failure: SocketError?
        data.withUnsafeBytes { bytes in
            do throws(SocketError) {
                try connection.send(bytes)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Receives more bytes into `pending`; fails at the end of the connection.
    private mutating func receiveMore() throws(SocketError) {
        let received = try connection.receive(upTo: 64 * 1024)
        guard !received.isEmpty else {
            throw SocketError("the server closed the connection before the answer was complete", code: .networkConnectionLost)
        }
        receivedAnswer = true
        pending.append(contentsOf: received)
    }

    private mutating func readLine() throws(SocketError) -> String {
        while true {
            if let end = pending.firstIndex(of: 0x0A) {
                let line = pending[..<end].last == 0x0D ? pending[..<(end - 1)] : pending[..<end]
                let text = String(decoding: line, as: UTF8.self)
                pending.removeFirst(end + 1)
                return text
            }
            if pending.count > 64 * 1024 { throw SocketError("an answer line is longer than 64 KiB", code: .badServerResponse) }
            try receiveMore()
        }
    }

    private mutating func readHead() throws(SocketError) -> (String, Int, [String: String]) {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw SocketError("malformed status line \"\(statusLine.prefix(100))\"", code: .badServerResponse)
        }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else {
                throw SocketError("malformed header line \"\(line.prefix(100))\"", code: .badServerResponse)
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        return (String(parts[0]), status, headers)
    }

    private mutating func readBody(status: Int, headers: [String: String]) throws(SocketError) -> Data {
        if method == "HEAD" || status == 204 || status == 304 {
            reusable = pending.isEmpty
            return Data()
        }
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            var body = Data()
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) ?? "", radix: 16),
                      size >= 0 else {
                    throw SocketError("malformed chunk size \"\(sizeLine.prefix(40))\"", code: .badServerResponse)
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    reusable = pending.isEmpty
                    return body
                }
                try readExactly(size, into: &body)
                guard try readLine().isEmpty else {
                    throw SocketError("chunk data of \(size) bytes is not followed by CRLF", code: .badServerResponse)
                }
            }
        }
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            var body = Data()
            try readExactly(length, into: &body)
            reusable = pending.isEmpty
            return body
        }
        // Delimited by the end of the connection, which therefore cannot be kept.
        var body = Data()
        while true {
            keep(&body, pending.count)
            let received = try connection.receive(upTo: 64 * 1024)
            if received.isEmpty { return body }
            pending.append(contentsOf: received)
        }
    }

    private mutating func readExactly(_ count: Int, into body: inout Data) throws(SocketError) {
        var remaining = count
        while remaining > 0 {
            if pending.isEmpty { try receiveMore() }
            let taken = min(remaining, pending.count)
            keep(&body, taken)
            remaining -= taken
        }
    }

    /// Moves the first `count` pending bytes to `body`, dropping what exceeds ``maxKeptBody``.
    private mutating func keep(_ body: inout Data, _ count: Int) {
        let room = max(0, Self.maxKeptBody - body.count)
        body.append(contentsOf: pending[0..<min(count, room)])
        pending.removeFirst(count)
    }
}
