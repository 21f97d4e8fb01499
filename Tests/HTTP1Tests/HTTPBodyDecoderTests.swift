import HTTP1
import Testing

/// Body framing and head parsing of the HTTP/1.1 client, fed byte sequences no server in the
/// test set sends on purpose: every split point, extensions, trailers, malformed sizes.
@Suite struct HTTPBodyDecoderTests {
    private func decode(_ head: HTTPResponseHead, _ pieces: [[UInt8]]) throws -> (payload: [UInt8], complete: Bool) {
        var decoder = try HTTPBodyDecoder(for: head)
        var payload: [UInt8] = []
        for piece in pieces {
            _ = try piece.withUnsafeBytes { bytes in
                try decoder.decode(bytes) { run in
                    payload += run
                    return true
                }
            }
        }
        return (payload, decoder.isComplete)
    }

    @Test func chunkedBodyDecodesAtEverySplitPoint() throws {
        let head = HTTPResponseHead(statusCode: 200, fields: [("Transfer-Encoding", "chunked")])
        let wire = Array("5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nignored".utf8)
        for split in 0...wire.count {
            let result = try decode(head, [Array(wire[..<split]), Array(wire[split...])])
            #expect(result.payload == Array("hello world".utf8), "split at \(split)")
            #expect(result.complete, "split at \(split)")
        }
    }

    @Test func truncatedChunkedBodyIsIncomplete() throws {
        let head = HTTPResponseHead(statusCode: 200, fields: [("Transfer-Encoding", "chunked")])
        let result = try decode(head, [Array("5\r\nhel".utf8)])
        #expect(result.payload == Array("hel".utf8))
        #expect(!result.complete)
    }

    @Test func malformedChunkSizeIsAProtocolViolation() {
        let head = HTTPResponseHead(statusCode: 200, fields: [("Transfer-Encoding", "chunked")])
        #expect(throws: HTTP1Error.self) { try decode(head, [Array("zz\r\nhello".utf8)]) }
        #expect(throws: HTTP1Error.self) { try decode(head, [Array("2\r\nhiXX".utf8)]) }
    }

    /// Trailer lines are bounded like a head: a peer sending them without end is refused
    /// instead of holding the reader for good.
    @Test func anEndlessTrailerIsAProtocolViolation() {
        let head = HTTPResponseHead(statusCode: 200, fields: [("Transfer-Encoding", "chunked")])
        let line = Array("X-Trailer: 0123456789\r\n".utf8)
        let pieces = [Array("2\r\nhi\r\n0\r\n".utf8)] + Array(repeating: line, count: HTTPResponseHead.maxHeadBytes / line.count + 1)
        #expect(throws: HTTP1Error.self) { try decode(head, pieces) }
    }

    @Test func contentLengthBodyStopsAtItsLength() throws {
        let head = HTTPResponseHead(statusCode: 206, fields: [("Content-Length", "4")])
        let result = try decode(head, [Array("ab".utf8), Array("cdef".utf8)])
        #expect(result.payload == Array("abcd".utf8))
        #expect(result.complete)
        #expect(try decode(HTTPResponseHead(statusCode: 200, fields: [("Content-Length", "0")]), []).complete)
    }

    @Test func headParsingJoinsRepeatedFieldsAndDecodesRanges() throws {
        let text = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\nETag: \"a\"\r\nVia: 1\r\nvia: 2"
        let head = try #require(HTTPResponseHead(parsing: Array(text.utf8)))
        #expect(head.statusCode == 206)
        #expect(head["VIA"] == "1, 2")
        #expect(head.contentRange?.first == 10 && head.contentRange?.last == 19 && head.contentRange?.total == 100)
        #expect(HTTPResponseHead(parsing: Array("SSH-2.0-OpenSSH\r\n".utf8)) == nil)
        #expect(HTTPResponseHead(statusCode: 416, fields: [("Content-Range", "bytes */1000")]).unsatisfiedRangeTotal == 1000)
    }

    @Test func headThatCouldBeReadTwoWaysIsRefused() throws {
        func parse(_ text: String) -> HTTPResponseHead? { HTTPResponseHead(parsing: Array(text.utf8)) }
        // A bare LF ends a line for libcurl: the socket transport must not see a field value
        // where URLSession sees a Transfer-Encoding.
        #expect(parse("HTTP/1.1 200 OK\r\nX-A: a\nTransfer-Encoding: gzip\r\nContent-Length: 3") == nil)
        #expect(parse("HTTP/1.1 200 OK\r\nX-A: a\rb") == nil)
        #expect(parse("HTTP/1.1 200 OK\r\nX-A: a\u{0}b") == nil)
        #expect(parse("HTTP/1.1 +20 OK") == nil)
        #expect(parse("HTTP/1.1 2000 OK") == nil)
        #expect(parse("HTTP/1.1 099 OK") == nil)
        #expect(parse("HTTP/1.1 200 OK\r\n Folded: before any field") == nil)
        // A folded line continues the field before it; it does not start a field of its own.
        let folded = try #require(parse("HTTP/1.1 200 OK\r\nX-A: one\r\n Transfer-Encoding: gzip\r\nContent-Length: 3"))
        #expect(folded["x-a"] == "one Transfer-Encoding: gzip")
        #expect(folded["transfer-encoding"] == nil)
        #expect(folded.framingViolation == nil)
        #expect(try #require(parse("HTTP/1.1 206")).statusCode == 206)
    }
}
