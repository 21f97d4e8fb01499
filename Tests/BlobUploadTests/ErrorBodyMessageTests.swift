import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// An error keeps at most one short line of the answer's body: never a whole HTML page.
@Suite struct ErrorBodyMessageTests {
    private func message(_ body: String, status: Int = 403, type: String? = nil) -> String? {
        HTTPReply(
            method: "PUT", url: URL(string: "http://example.com/x")!, statusCode: status,
            headers: type.map { ["content-type": $0] } ?? [:], body: Data(body.utf8)
        ).message
    }

    @Test func anHTMLPageKeepsOnlyATitleThatSaysMoreThanTheStatus() {
        let nginx = "<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n<center><h1>403 Forbidden</h1>"
            + "</center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
        #expect(message(nginx, type: "text/html") == nil)
        #expect(message(nginx) == nil)
        #expect(message("<!DOCTYPE html><html><head>\n<title>\n  Access denied | example.com  \n</title>", type: "text/html")
            == "Access denied | example.com")
        #expect(message("<html><body>no title</body></html>", type: "text/html; charset=utf-8") == nil)
        #expect(message("<html><title>Forbidden</title></html>", type: "text/html") == nil)
    }

    @Test func plainTextKeepsItsFirstLineCut() {
        #expect(message("\n\n  upload quota exceeded \nline two\n", type: "text/plain") == "upload quota exceeded")
        #expect(message("{\"detail\":\"Not Found\"}", type: "application/json") == "{\"detail\":\"Not Found\"}")
        let long = message(String(repeating: "x", count: 1000))
        #expect(long == String(repeating: "x", count: 200) + "…")
        #expect(message("tab\tand\u{1B}[31mescape") == "tab and [31mescape")
        #expect(message("   \n  ") == nil)
    }

    /// Only the start of a long body is decoded: a character cut there is no sign of binary.
    @Test func aLongBodyCutInsideACharacterKeepsItsLine() {
        let text = "x" + String(repeating: "é", count: 5000)
        #expect(message(text, type: "text/plain") == "x" + String(repeating: "é", count: 199) + "…")
    }

    /// Nothing in a message can reorder or hide what a terminal shows (a right-to-left
    /// override, zero-width characters), and no character can carry an unbounded tail of
    /// combining marks past the limit.
    @Test func invisibleAndUnboundedCharactersAreKeptOut() {
        #expect(message("evil \u{202E}gnp.exe\u{202C} done\u{200B}!") == "evil gnp.exe done!")
        let marks = message("a" + String(repeating: "\u{0301}", count: 4000))
        #expect(marks.map { $0.unicodeScalars.count } == 201, "\(marks?.unicodeScalars.count ?? -1)")
    }

    /// An XML error document (S3's, GCS's) is its code and message, entities decoded.
    @Test func anXMLErrorDocumentIsItsCodeAndMessage() {
        let document = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidArgument</Code>"
            + "<Message>A &amp; B &lt;x&gt;</Message></Error>"
        #expect(message(document, status: 400, type: "application/xml") == "InvalidArgument: A & B <x>")
        #expect(message("<Error><Code>NoSuchKey</Code></Error>", status: 404) == "NoSuchKey")
    }

    @Test func binaryBodiesKeepNothing() {
        let reply = HTTPReply(
            method: "PUT", url: URL(string: "http://example.com/x")!, statusCode: 500, headers: [:],
            body: Data([0x00, 0xFF, 0xFE, 0x41]))
        #expect(reply.message == nil)
    }

    /// nginx answers a PUT where it stores nothing with 405 and its HTML page.
    @Test func nginxsErrorPageStaysOutOfTheError() async throws {
        try TestServers.requireNginx()
        let target = TestServers.nginxURL.appendingPathComponent("not-here-\(UUID().uuidString).bin")
        let expected = BlobUploadError.httpStatus(method: "PUT", url: target.absoluteString, statusCode: 405, message: nil)

        await #expect(throws: expected) {
            _ = try await StreamedUploader().upload(InputStream(data: Data("hello".utf8)), to: target)
        }
        #expect(expected.description == "PUT \(target): HTTP 405 Method Not Allowed")
    }
}
