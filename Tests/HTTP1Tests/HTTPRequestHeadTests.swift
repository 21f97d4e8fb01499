import Foundation
import HTTP1
import Testing

/// A head with a caller's fields exists only checked: the field check runs when
/// it is built, and the writer then writes what it holds.
@Suite struct HTTPRequestHeadTests {
    private let url = URL(string: "http://127.0.0.1:8080/files/a?x=1")!

    @Test(arguments: [("X-Note", "a\r\nInjected: 1"), ("X-Note", "a\0b"), ("X Bad", "v"), ("", "v")])
    func anUnusableFieldBuildsNoHead(name: String, value: String) {
        #expect(throws: HTTPFieldCheck.Failure(name: name, problem: name == "X-Note" ? .value : .name)) {
            _ = try HTTPRequestHead(method: "GET", url: url, checking: ["A": "ok", name: value])
        }
    }

    /// A port outside 1...65535, or one too large for `URL` to parse, gives no endpoint:
    /// `getaddrinfo` would connect 65617 to 81, and an unparsed port would mean port 80.
    @Test(arguments: [
        ("http://127.0.0.1:65617/x", nil), ("http://127.0.0.1:0/x", nil), ("http://h:99999999999999999999/", nil),
        ("http://u:p@h:81/", 81), ("http://h/", 80), ("http://h:/", 80), ("http://[::1]:8080/x", 8080),
        ("http://h:65535/", 65535),
    ] as [(String, Int?)])
    func theEndpointNeedsAUsablePort(url: String, port: Int?) throws {
        let head = HTTPRequestHead(method: "GET", url: try #require(URL(string: url)), fields: [])
        #expect(head.endpoint?.port == port)
    }

    @Test func settingReplacesACallersFieldInAnyCase() throws {
        let head = try HTTPRequestHead(
            method: "HEAD", url: url, checking: ["tus-resumable": "0.2", "Authorization": "Bearer x"],
            setting: [("Tus-Resumable", "1.0.0")])
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text == "HEAD /files/a?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: Bearer x\r\nTus-Resumable: 1.0.0\r\n\r\n")
    }

    @Test func aChunkedHeadSaysSoInsteadOfALength() throws {
        var head = try HTTPRequestHead(method: "PUT", url: url, checking: [:])
        head.contentLength = 5
        head.isChunked = true
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text.contains("Transfer-Encoding: chunked\r\n"))
        #expect(!text.contains("Content-Length"))
    }

    @Test func aChunkIsFramedInPlace() {
        let buffer = HTTPChunkBuffer(capacity: 300)
        for index in 0..<300 { buffer.payload[index] = UInt8(ascii: "a") }
        let frame = Array(buffer.frame(300))
        #expect(frame == Array("12c\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 300) + [13, 10])
        #expect(HTTPChunkBuffer.lastChunk == Array("0\r\n\r\n".utf8))
    }
}
