import BlobStream
import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// An error names the URL that failed, never the password in it.
@Suite struct PasswordRedactionTests {
    @Test(arguments: [
        ("PUT http://alice:s3cret@127.0.0.1:81/obj: HTTP 401", "PUT http://alice:***@127.0.0.1:81/obj: HTTP 401"),
        ("a http://u:p@h/x and https://v:q@k?z", "a http://u:***@h/x and https://v:***@k?z"),
        ("http://user@host/ has no password", "http://user@host/ has no password"),
        ("mail me@example.com, see http://h/a@b", "mail me@example.com, see http://h/a@b"),
        ("http://u:p:q@h", "http://u:***@h"),
        ("no url at all", "no url at all"),
    ])
    func passwordsAreHidden(text: String, expected: String) {
        #expect(PasswordRedaction.hidingPasswords(in: text) == expected)
    }

    @Test func anUploadErrorDoesNotPrintThePassword() async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"]])
        let url = URL(string: "http://alice:s3cret@127.0.0.1:\(server.port)/obj")!
        do {
            _ = try await StreamedUploader().upload(InputStream(data: Data("abc".utf8)), to: url)
            Issue.record("a 401 was taken for a success")
        } catch {
            let text = "\(error)"
            #expect(!text.contains("s3cret"), "\(text)")
            #expect(text.contains("alice:***@127.0.0.1"), "\(text)")
        }
    }
}
