import Foundation
import Glibc
import HTTP1
import SystemCalls

/// An HTTP/1.1 server on 127.0.0.1 that reads every request body to its end, counts the payload
/// bytes and drops them, then answers `204 No Content`: the PUT target when the client's own
/// cost is what is measured.
///
/// Why not nginx: storing a PUT costs nginx about a core per 2 GB/s even on tmpfs with a 1 MiB
/// body buffer, and on a 2-core machine `curl -T` and our PUT both end at that ceiling (measured
/// 2.1 GB/s each), so the ratio to URLSession (1.5 GB/s) says how close URLSession comes to
/// the server's limit, not how much faster our client is. Counting costs the sink one copy out
/// of the socket. What nginx would have stored is checked here instead: a run counts only when
/// the sink decoded exactly the file's byte count for that request's path.
///
/// Framing is HTTP1's own ``HTTPBodyDecoder`` (length or chunked, the rules the clients are held
/// to); a request with neither framing has no body (RFC 9112 §6.3). `Expect: 100-continue` is
/// answered, since `curl -T` otherwise waits a second for it.
final class CountingSink: Sendable {
    /// The port it listens on.
    let port: UInt16
    private let listener: Int32
    /// Payload bytes decoded per request path; a body cut short or malformed records -1.
    private let counts = LockedValue<[String: Int64]>([:])

    /// Listens on an ephemeral port and serves each connection on a thread of its own.
    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchmarkError("counting sink: socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && Glibc.listen(fd, 16) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard listening else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw BenchmarkError("counting sink: cannot listen on 127.0.0.1: \(reason)")
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptForever() }
        thread.name = "blob-bench counting sink"
        thread.start()
    }

    /// The payload byte count of the last request to `path` (-1 when its body broke off), and
    /// forgets it, so a run that never reached the sink cannot borrow an earlier run's count.
    func takeCount(path: String) -> Int64? {
        counts.withLock { $0.removeValue(forKey: path) }
    }

    private func acceptForever() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            Thread { [self] in
                serve(connection)
                close(connection)
            }.start()
        }
    }

    private static let bufferSize = 1 << 20

    /// Serves requests on one kept-alive connection until the peer closes or breaks framing.
    private func serve(_ fd: Int32) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var filled = 0
        while true {
            var headEnd = Self.endOfHead(in: UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
            while headEnd == nil {
                guard filled < HTTPResponseHead.maxHeadBytes, let got = receive(fd, into: buffer, at: filled) else { return }
                filled += got
                headEnd = Self.endOfHead(in: UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
            }
            guard let headEnd, let request = Self.parseHead(UnsafeRawBufferPointer(rebasing: buffer[0..<headEnd])) else { return }
            if request.fields.contains(where: { $0.0 == "expect" && $0.1.lowercased() == "100-continue" }) {
                guard send(fd, "HTTP/1.1 100 Continue\r\n\r\n") else { return }
            }
            guard let count = countBody(fd, buffer: buffer, headEnd: headEnd, filled: &filled, fields: request.fields) else {
                counts.withLock { $0[request.path] = -1 }
                return
            }
            counts.withLock { $0[request.path] = count }
            guard send(fd, "HTTP/1.1 204 No Content\r\nX-Received-Bytes: \(count)\r\n\r\n") else { return }
        }
    }

    /// Decodes the body that follows the head ending at `headEnd`, counting its payload; leaves
    /// the bytes after it (the next request's) at the start of `buffer`, `filled` long. Nil when
    /// the body is malformed or the connection ends first.
    private func countBody(
        _ fd: Int32, buffer: UnsafeMutableRawBufferPointer, headEnd: Int, filled: inout Int, fields: [(String, String)]
    ) -> Int64? {
        // HTTP1 decodes answers; a request body is framed by the same two fields.
        guard var decoder = try? HTTPBodyDecoder(for: HTTPResponseHead(statusCode: 200, fields: fields)) else { return nil }
        var count: Int64 = 0
        var pending = UnsafeRawBufferPointer(rebasing: buffer[headEnd..<filled])
        while !decoder.endsAtClose && !decoder.isComplete {
            if pending.isEmpty {
                guard let got = receive(fd, into: buffer, at: 0) else { return nil }
                pending = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            }
            guard let used = try? decoder.decode(pending, emit: { count += Int64($0.count); return true }).consumed else { return nil }
            pending = UnsafeRawBufferPointer(rebasing: pending[used...])
        }
        if let base = buffer.baseAddress, let from = pending.baseAddress, !pending.isEmpty {
            memmove(base, from, pending.count)
        }
        filled = pending.count
        return count
    }

    /// Reads into `buffer` from `offset`; nil at the end of the connection or on an error.
    private func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        while true {
            let got = recv(fd, base + offset, buffer.count - offset, 0)
            if got > 0 { return got }
            if got < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private func send(_ fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            bytes = bytes.dropFirst(sent)
        }
        return true
    }

    /// The index just past the head's terminating CRLF CRLF, if it has arrived.
    private static func endOfHead(in bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// The request target and the fields (names lowercased) of a head, or nil when malformed.
    private static func parseHead(_ bytes: UnsafeRawBufferPointer) -> (path: String, fields: [(String, String)])? {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n")
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3 else { return nil }
        var fields: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return (String(parts[1]), fields)
    }
}
