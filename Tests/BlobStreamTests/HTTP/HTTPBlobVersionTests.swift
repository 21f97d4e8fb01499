@testable import BlobStream
import HTTP1
import Testing

/// Which validators of a response head name the blob's version, and which may go in `If-Range`.
@Suite struct HTTPBlobVersionTests {
    @Test func validatorsOfAHead() throws {
        let text = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\nETag: \"a\"\r\nVia: 1\r\nvia: 2"
        let head = try #require(HTTPResponseHead(parsing: Array(text.utf8)))
        #expect(HTTPBlobVersion(head).ifRangeValue == "\"a\"")
        let weak = HTTPResponseHead(statusCode: 200, fields: [("ETag", "W/\"b\""), ("Last-Modified", "Sat, 21 Nov 2026 13:32:08 GMT")])
        #expect(HTTPBlobVersion(weak).ifRangeValue == nil, "a weak tag cannot go in If-Range, nor a date without a later Date")
        #expect(HTTPBlobVersion(weak).token == "W/\"b\"")
        let dated = HTTPResponseHead(statusCode: 200, fields: [("Last-Modified", "Sat, 21 Nov 2026 13:32:08 GMT"), ("Date", "Sat, 21 Nov 2026 13:32:09 GMT")])
        #expect(HTTPBlobVersion(dated).ifRangeValue == "Sat, 21 Nov 2026 13:32:08 GMT", "a second later, the date is strong")
        let sameSecond = HTTPResponseHead(statusCode: 200, fields: [("Last-Modified", "Sat, 21 Nov 2026 13:32:08 GMT"), ("Date", "Sat, 21 Nov 2026 13:32:08 GMT")])
        #expect(HTTPBlobVersion(sameSecond).ifRangeValue == nil)
        #expect(HTTPBlobVersion.seconds(inHTTPDate: "Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPBlobVersion.seconds(inHTTPDate: "Sunday, 06-Nov-94 08:49:37 GMT") == nil)
    }
}
