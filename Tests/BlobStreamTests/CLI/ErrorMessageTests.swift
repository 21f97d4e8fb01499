import BlobTestSupport
import Foundation
import Testing

/// What a user reads when a server answers with an error or does not answer at all: one line,
/// prefixed with the command, the status and its reason instead of an HTML page, and the same
/// words for a server that is down whichever command met it.
@Suite struct ErrorMessageTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    /// A URL given with a password never prints it, in any of the messages a command makes
    /// itself (a refused connection, a source's HTTP status, the source named up front).
    @Test func aPasswordInAURLIsNeverPrinted() async throws {
        let refusedTarget = try await blobstream(["upload", "/etc/hostname", "http://user:SECRET1@127.0.0.1:9/files/"])
        let refusedSource = try await blobstream(["put", "http://user:SECRET2@127.0.0.1:9/x", TestServers.nginxURL.absoluteString + "upload/p.bin"])
        let server = try ScriptedHTTPServer { _ in ScriptedHTTPServer.response(status: "404 Not Found") }
        defer { server.stop() }
        let missing = try await blobstream(["checksum", "http://user:SECRET3@127.0.0.1:\(server.port)/blob"])
        for (result, secret) in [(refusedTarget, "SECRET1"), (refusedSource, "SECRET2"), (missing, "SECRET3")] {
            #expect(result.status == 1)
            #expect(!result.standardError.contains(secret), "\(result.standardError)")
            #expect(result.standardError.contains("user:***@127.0.0.1"), "\(result.standardError)")
        }
    }

    @Test func anHTMLErrorPageIsReducedToItsStatus() async throws {
        try TestServers.requireNginx()
        // nginx answers PUT outside /upload/ with 405 and an HTML page.
        let put = try await blobstream(["put", "/etc/hostname", TestServers.nginxURL.absoluteString + "cli-not-allowed.bin"])
        #expect(put.status == 1)
        #expect(put.standardError == "blobstream put: /etc/hostname: PUT \(TestServers.nginxURL.absoluteString)cli-not-allowed.bin: "
            + "HTTP 405 Method Not Allowed\n")
    }

    @Test func aPlainTextBodyShowsItsFirstLineOnly() async throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(
                status: "403 Forbidden", fields: ["Content-Type": "text/plain"],
                body: Array("quota exceeded for this bucket\nsecond line\n\u{1B}[31mthird\n".utf8))
        }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/blob"
        let put = try await blobstream(["put", "/etc/hostname", url])
        #expect(put.status == 1)
        #expect(put.standardError == "blobstream put: /etc/hostname: PUT \(url): HTTP 403 Forbidden: quota exceeded for this bucket\n")
    }

    @Test func anUploadEndpointThatIsNoTusServerIsNamedAsSuch() async throws {
        try TestServers.requireNginx()
        for endpoint in [TestServers.uploadURL.absoluteString, TestServers.nginxURL.absoluteString] {
            let result = try await blobstream(["upload", "/etc/hostname", endpoint])
            #expect(result.status == 1)
            #expect(result.standardError.contains("HTTP 403 Forbidden"), "\(result.standardError)")
            #expect(result.standardError.contains("\(endpoint) does not answer like a tus server"))
            #expect(!result.standardError.contains("<html>"))
            #expect(result.standardError.split(separator: "\n").count == 1)
        }
    }

    /// A web server that answers 200 to everything: its creation answer has no Tus-Resumable,
    /// and the message says what that likely means.
    @Test func anEndpointThatAnswersEverythingWithOKIsNamedAsNoTusServer() async throws {
        let server = try ScriptedHTTPServer { _ in ScriptedHTTPServer.response(status: "200 OK", body: Array("<html>hi</html>".utf8)) }
        defer { server.stop() }
        let endpoint = "http://127.0.0.1:\(server.port)/files/"
        let result = try await blobstream(["upload", "/etc/hostname", endpoint])
        #expect(result.status == 1)
        #expect(result.standardError == "blobstream upload: /etc/hostname: POST \(endpoint): HTTP 200 OK: \(endpoint) does not "
            + "answer like a tus server (the answer has no Tus-Resumable header); is it the tus creation URL?\n")
    }

    /// Nothing listens on 127.0.0.1:1. Each command says so in the same words: the uploads at
    /// once; a source that reads the URL after each of its retries, which it prints.
    @Test func aServerThatIsDownIsReportedOneWayByEveryCommand() async throws {
        let url = "http://127.0.0.1:1/files/"
        let refused = "cannot connect to 127.0.0.1:1 (\(url)): connection refused; is the server running?"
        let expected = refused + "\n"
        let upload = try await blobstream(["upload", "/etc/hostname", url])
        let put = try await blobstream(["put", "/etc/hostname", url])
        let checksum = try await blobstream(["checksum", url])
        let cat = try await blobstream(["cat", url])
        #expect(upload.standardError == "blobstream upload: /etc/hostname: " + expected, "a fresh upload fails at once, without retries")
        #expect(put.standardError == "blobstream put: /etc/hostname: " + expected)
        for (name, result) in [("checksum", checksum), ("cat", cat)] {
            let lines = result.standardError.split(separator: "\n").map(String.init)
            #expect(lines.last == "blobstream \(name): " + refused, "\(result.standardError)")
            let retries = (1...5).map { "blobstream \(name): retry \($0) of 5 in " }
            #expect(lines.dropLast().count == 5 && zip(lines, retries).allSatisfy { $0.hasPrefix($1) && $0.hasSuffix(refused) },
                    "\(result.standardError)")
        }
        #expect([upload.status, put.status, checksum.status, cat.status] == [1, 1, 1, 1])
    }

    /// A resumed upload keeps retrying a refused connection (the server may be restarting), and
    /// says at once that it does and for how long, prefixed like every other message.
    @Test func aResumedUploadAnnouncesItsRetries() async throws {
        let process = try ToolProcess.startBlobstream(["upload", "--resume", "http://127.0.0.1:1/files/abc", "/etc/hostname", "http://127.0.0.1:1/files/"], standardInput: .pipe)
        #expect(await process.send(SIGINT, once: .init(handlesSignals: false, complained: "\n")).complained)
        let result = await process.finished()
        let first = try #require(result.standardError.split(separator: "\n").first.map(String.init))
        #expect(first.hasPrefix("blobstream upload: retry 1 in "))
        #expect(first.contains("cannot connect to 127.0.0.1:1"))
        #expect(first.contains("(8 attempts in all, with up to "), "\(first)")
        #expect(result.status == 130)
        #expect(result.standardError.hasSuffix("continue with --resume http://127.0.0.1:1/files/abc\n"))
    }
}
