import BlobStream
@testable import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// A creation `POST` redirected within the origin is answered by another URL than the
/// endpoint: a relative `Location` in that answer is relative to the URL that answered, as
/// for any HTTP answer, so the upload's bytes go where the server said.
@Suite struct TusCreationRedirectTests {
    /// A permanent redirect that also closes the connection, so that either transport opens a
    /// new one for the redirected request and the script knows which connection gets it.
    private static func permanentRedirect(_ location: String) -> String {
        "HTTP/1.1 308 Permanent Redirect\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aRelativeLocationIsResolvedAgainstTheURLThatAnswered(transport: TusClient.Transport) async throws {
        // Every answer closes its connection: whether a client keeps a connection for the
        // next request is its own choice (an idle one may have expired on a loaded machine),
        // and the script must not depend on it.
        let closing = { (answer: String) in answer.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n") }
        let server = try ScriptedHTTPServer(connections: [
            [closing(ScriptedTus.options)],
            [Self.permanentRedirect("/v2/files/")],
            [closing(ScriptedTus.created("abc"))],
            [ScriptedTus.patched(10)],
        ])
        let client = TusClient(endpoint: ScriptedTus.endpoint(server), transport: transport)

        let result = try await client.upload(ScriptedTus.source(10), options: ScriptedTus.options(chunkSize: 64))

        #expect(result.uploadURL.absoluteString == "http://127.0.0.1:\(server.port)/v2/files/abc")
        let requests = server.requests.map { $0.prefix { $0 != "\r\n" } }
        #expect(requests == [
            "OPTIONS /files/ HTTP/1.1", "POST /files/ HTTP/1.1", "POST /v2/files/ HTTP/1.1", "PATCH /v2/files/abc HTTP/1.1",
        ])
    }

    /// A redirect whose `Location` is no URL, answering a request without a body (a `HEAD`),
    /// is a broken answer of that request, not a refusal to send a body again.
    @Test func aLocationThatIsNoURLIsAMalformedAnswer() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            "HTTP/1.1 301 Moved Permanently\r\nLocation: http://[zz/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ]])
        defer { server.stop() }
        let uploadURL = URL(string: "http://127.0.0.1:\(server.port)/files/a")!
        let outcome: Result<TusUploadStatus, BlobUploadError>
        do throws(BlobUploadError) {
            outcome = .success(try await TusClient(endpoint: ScriptedTus.endpoint(server)).status(of: uploadURL))
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(let error) = outcome, case .malformedAnswer(.tus(method: "HEAD"), let url, let reason) = error else {
            Issue.record("not a malformed answer of the HEAD: \(outcome)")
            return
        }
        #expect(url == uploadURL.absoluteString)
        #expect(reason.contains("http://[zz/") && reason.contains("not a URL"), "\(reason)")
        #expect(!"\(error)".contains("body"), "\(error)")
    }
}
