/// A whole answer, read by ``HTTP1Connection/readAnswer(method:wait:keepingAtMost:)``.
package struct HTTP1Answer: Sendable {
    /// The final (non-interim) head.
    package var head: HTTPResponseHead
    /// The body's first bytes, up to the limit the reader was given.
    package var body: [UInt8]
    /// Whether the connection can carry another request: the body ended where the server said,
    /// nothing followed it, the server keeps the connection open, and did not switch it to
    /// another protocol (101).
    package var reusable: Bool
}

extension HTTP1Connection {
    /// Bytes received at once while reading a head or a kept body.
    package static let receiveSize = 16 * 1024
    /// The most interim (1xx) answers skipped before a final one.
    package static let maxInterimHeads = 16

    /// Reads up to the end of the final response head, skipping interim (1xx) answers but 101,
    /// within `wait`. `buffer` holds the bytes received before (usually none) and, on return,
    /// the bytes after the head: the start of the body.
    /// - Throws: ``HTTP1Error/protocolViolation(reason:)`` for a malformed head or one larger
    ///   than the limits (``HTTPResponseHead/sizeViolation``), ``HTTP1Error/network(reason:cause:)`` when the
    ///   peer closes before the end of the head (naming how many bytes came), or the
    ///   connection's errors.
    package func readResponseHead(wait: HTTP1Wait, buffer: inout [UInt8]) throws(HTTP1Error) -> HTTPResponseHead {
        enter(.awaitingAnswer)
        var searched = 0
        var headBytes = 0
        var interimHeads = 0
        while true {
            if let end = Self.endOfHead(in: buffer, from: searched) {
                let head = try HTTPResponseHead.parse(buffer[..<end])
                if let violation = head.sizeViolation { throw .protocolViolation(reason: violation) }
                headBytes += end + 4
                buffer.removeFirst(end + 4)
                searched = 0
                if head.isInterim {
                    interimHeads += 1
                    // A server sends a few at most (100, 102, 103); one that never stops is
                    // refused at once, not only at the deadline.
                    guard interimHeads <= Self.maxInterimHeads else {
                        throw .protocolViolation(reason: "more than \(Self.maxInterimHeads) interim (1xx) answers before the final one")
                    }
                    continue
                }
                enter(.readingAnswer)
                return head
            }
            searched = max(0, buffer.count - 3)
            guard buffer.count < HTTPResponseHead.maxHeadBytes else {
                throw .protocolViolation(reason: "the response head is longer than \(HTTPResponseHead.maxHeadBytes) bytes")
            }
            guard try receive(appendingTo: &buffer, upTo: Self.receiveSize, wait: wait) > 0 else {
                let received = headBytes + buffer.count
                throw .network(reason: received == 0
                    ? "the server closed the connection before answering"
                    : "the server closed the connection after \(received) bytes of its answer, inside a response head",
                    cause: .lost)
            }
        }
    }

    /// Reads a whole answer to a request with `method`: its head, then its body, of which the
    /// first `limit` bytes are kept (an answer with a larger body is still read to its end, so
    /// the connection can be used again — or, when `failingPastLimit`, fails with
    /// ``HTTP1Error/answerTooLong(limit:)`` as soon as its body passes `limit`, for peers whose
    /// answers are small: an endless body then cannot keep the reader busy). `wait` bounds the whole answer: a
    /// deadline (``HTTP1Wait/until(_:)``) is the one a peer answering one byte at a time
    /// cannot stretch.
    /// `received`: bytes of the answer already taken from the connection
    /// (``answerBegan(carrying:wait:)``).
    package func readAnswer(
        method: String, wait: HTTP1Wait, keepingAtMost limit: Int, failingPastLimit: Bool = false, after received: [UInt8] = []
    ) throws(HTTP1Error) -> HTTP1Answer {
        var buffer = received
        let head = try readResponseHead(wait: wait, buffer: &buffer)
        var decoder = try HTTPBodyDecoder(for: head, method: method)
        var body: [UInt8] = []
        var overflowed = false
        func keep(_ bytes: UnsafeRawBufferPointer) -> Bool {
            if bytes.count > limit - body.count { overflowed = true }
            body.append(contentsOf: bytes.prefix(max(0, limit - body.count)))
            return true
        }
        var consumed = try Self.decode(buffer, with: &decoder, emit: keep)
        var trailing = buffer.count - consumed
        while !decoder.isComplete {
            if failingPastLimit, overflowed { throw .answerTooLong(limit: limit) }
            buffer.removeAll(keepingCapacity: true)
            guard try receive(appendingTo: &buffer, upTo: Self.receiveSize, wait: wait) > 0 else {
                if decoder.endsAtClose { return HTTP1Answer(head: head, body: body, reusable: false) }
                throw .network(reason: "the server closed the connection after \(decoder.payloadBytes) body bytes, before the end of the body", cause: .lost)
            }
            consumed = try Self.decode(buffer, with: &decoder, emit: keep)
            trailing = buffer.count - consumed
        }
        if failingPastLimit, overflowed { throw .answerTooLong(limit: limit) }
        let reusable = trailing == 0 && head.keepsConnection && !decoder.endsAtClose
        return HTTP1Answer(head: head, body: body, reusable: reusable)
    }

    /// Receives at most `count` bytes onto the end of `buffer`; returns how many (0: closed).
    package func receive(appendingTo buffer: inout [UInt8], upTo count: Int, wait: HTTP1Wait) throws(HTTP1Error) -> Int {
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: count))
        var received = 0
        defer { buffer.removeLast(count - received) }
        var result: Result<Int, HTTP1Error> = .success(0)
        buffer.withUnsafeMutableBytes { bytes in
            result = Result { () throws(HTTP1Error) in
                try receive(into: UnsafeMutableRawBufferPointer(rebasing: bytes[start...]), wait: wait)
            }
        }
        received = try result.get()
        return received
    }

    /// Decodes all of `buffer`; returns how many of its bytes belong to the body.
    private static func decode(
        _ buffer: [UInt8], with decoder: inout HTTPBodyDecoder, emit: (UnsafeRawBufferPointer) -> Bool
    ) throws(HTTP1Error) -> Int {
        var result: Result<Int, HTTP1Error> = .success(0)
        buffer.withUnsafeBytes { bytes in
            result = Result { () throws(HTTP1Error) in try decoder.decode(bytes, emit: emit).consumed }
        }
        return try result.get()
    }

    /// The index of the CRLFCRLF that ends a head, searching `bytes` from `start`.
    static func endOfHead(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4, start <= bytes.count - 4 else { return nil }
        for index in start...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
