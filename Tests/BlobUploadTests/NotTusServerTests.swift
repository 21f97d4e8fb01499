import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// An endpoint that is not a tus server is named as such, not reported as a bare HTTP status
/// with the web server's error page; a tus server's own errors stay HTTP statuses.
@Suite struct NotTusServerTests {
    private func upload(to endpoint: URL, resuming: URL? = nil) async throws {
        _ = try await TusClient(endpoint: endpoint).upload(
            ScriptedTus.source(3000), resuming: resuming, options: ScriptedTus.options(chunkSize: 1000))
    }

    /// nginx answers OPTIONS with 405 and POST with 403, both HTML pages and no Tus-Resumable.
    @Test(arguments: ["", "upload/"])
    func nginxIsNotATusServer(path: String) async throws {
        try TestServers.requireNginx()
        let endpoint = try #require(URL(string: TestServers.nginxURL.absoluteString + path))
        let expected = BlobUploadError.notTusServer(method: "POST", url: endpoint.absoluteString, statusCode: 403)

        await #expect(throws: expected) { try await upload(to: endpoint) }

        #expect(expected.description == "POST \(endpoint): HTTP 403 Forbidden: \(endpoint) does not answer like a tus "
            + "server (the answer has no Tus-Resumable header); is it the tus creation URL?")
    }

    /// Resuming "an upload" that is a plain file: the HEAD answers 200 without tus headers.
    @Test func aPlainFileIsNotATusUpload() async throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "not-tus", size: 3000)
        defer { TempFiles.remove(path) }
        let fileURL = try TestServers.nginxURL(forFileAtPath: path)

        let expected = BlobUploadError.notTusServer(method: "HEAD", url: fileURL.absoluteString, statusCode: 200)

        await #expect(throws: expected) { try await upload(to: TestServers.nginxURL, resuming: fileURL) }

        #expect(expected.description == "HEAD \(fileURL): HTTP 200 OK: \(fileURL) does not answer like a tus upload "
            + "(the answer has no Tus-Resumable header); is it the URL of a tus upload?")
    }

    /// A server that accepts anything: OPTIONS and POST answer 200 with a page.
    @Test func aSuccessWithoutTusResumableIsNotATusServer() async throws {
        let page = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<p>hello</p>\n"
        let server = try ScriptedHTTPServer(connections: [[page, page]])

        await #expect(throws: BlobUploadError.notTusServer(
            method: "POST", url: ScriptedTus.endpoint(server).absoluteString, statusCode: 200)) {
            try await upload(to: ScriptedTus.endpoint(server))
        }
        // Nothing but the creation request was sent.
        #expect(server.requests.count == 2)
    }

    /// A server that implements neither OPTIONS nor POST (501 to both): named at once, not
    /// retried as a server error that may pass.
    @Test func aServerThatImplementsNothingIsNotATusServer() async throws {
        let page = "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<p>hello</p>\n"
        let server = try ScriptedHTTPServer(connections: [[page, page]])

        await #expect(throws: BlobUploadError.notTusServer(
            method: "POST", url: ScriptedTus.endpoint(server).absoluteString, statusCode: 501)) {
            try await upload(to: ScriptedTus.endpoint(server))
        }
        #expect(server.requests.count == 2)
    }

    /// tuspyserver's own errors carry no Tus-Resumable: once OPTIONS showed a tus server, a
    /// POST error is that server's HTTP status, with one line of its body.
    @Test func aTusServersOwnErrorStaysAnHTTPStatus() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options,
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 27\r\n\r\n\n  bad metadata  \nsecond line",
        ]])
        let endpoint = ScriptedTus.endpoint(server)

        await #expect(throws: BlobUploadError.httpStatus(
            method: "POST", url: endpoint.absoluteString, statusCode: 400, message: "bad metadata")) {
            try await upload(to: endpoint)
        }
    }

    /// An authentication challenge comes before any tus server is reached: it stays a status,
    /// the first request's (the OPTIONS), which the upload's requests would all get.
    @Test func anAuthenticationChallengeStaysAnHTTPStatus() async throws {
        let challenge = "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[challenge, challenge]])
        let endpoint = ScriptedTus.endpoint(server)

        await #expect(throws: BlobUploadError.httpStatus(
            method: "OPTIONS", url: endpoint.absoluteString, statusCode: 401, message: nil)) {
            try await upload(to: endpoint)
        }
    }
}
