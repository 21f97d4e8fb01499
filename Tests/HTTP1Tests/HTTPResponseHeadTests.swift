@testable import HTTP1
import Testing

/// The response head parser: a head that could be read two ways is refused, never guessed.
@Suite struct HTTPResponseHeadTests {
    static func parse(_ text: String) throws(HTTP1Error) -> HTTPResponseHead {
        try HTTPResponseHead.parse(Array(text.utf8))
    }

    /// Whitespace between a field name and its colon frames a body one way here and another
    /// way (or not at all) in a proxy that drops such a field: refused (RFC 9112 §5.1), as is
    /// any name that is not a token.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length : 5", "HTTP/1.1 200 OK\r\nTransfer-Encoding\t: chunked",
        "HTTP/1.1 200 OK\r\nContent Length: 5", "HTTP/1.1 200 OK\r\nContent-Length(x): 5",
    ])
    func aFieldNameThatIsNoTokenIsRefused(head: String) {
        #expect(throws: HTTP1Error.self) { try Self.parse(head) }
    }

    @Test func tokensAndTheirValuesAreRead() throws {
        let head = try Self.parse("HTTP/1.1 206 Partial Content\r\nContent-Length:  5 \r\nX-Odd_Name!: a\r\n\tb")
        #expect(head.statusCode == 206)
        #expect(head["content-length"] == "5")
        #expect(head["x-odd_name!"] == "a b")
    }
}
