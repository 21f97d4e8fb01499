import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import SystemCalls
import Testing

/// `blobstream upload` and `blobstream put`, run as processes against the real servers.
@Suite(.serialized) struct UploadCommandTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    @Test func uploadPrintsTheURLFirstAndLastAndTheBytesArrive() async throws {
        try TestServers.requireChecksumTus()
        let path = try makeRandomFile(size: 9_000_001, seed: 21)
        defer { TempFiles.remove(path) }

        let result = try await blobstream(["upload", "--chunk-size", "2000000", path, TestServers.checksumTusFilesURL.absoluteString])

        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        // The upload URL comes first, even when the upload then fails.
        defer { TestServers.removeUploads(lines.compactMap(URL.init(string:))) }
        #expect(lines.count == 2)
        #expect(lines.first == lines.last)
        let uploadURL = try #require(URL(string: lines.last ?? ""))
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    /// A URL of unknown length (nginx's chunked route) is uploaded as standard input is: read
    /// once, its length deferred to its last chunk, and said so.
    @Test func aURLOfUnknownLengthIsUploadedWithItsLengthDeferred() async throws {
        try TestServers.requireTus()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "unknown-length", size: 3_000_001)
        defer { TempFiles.remove(path) }
        let source = try TestServers.nginxURL(forFileAtPath: path, route: .chunked).absoluteString

        let result = try await blobstream(["upload", "--chunk-size", "1M", source, TestServers.tusFilesURL.absoluteString])

        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.contains("its length is unknown: it is read once"), "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        defer { TestServers.removeUploads(lines.compactMap(URL.init(string:))) }
        let uploadURL = try #require(URL(string: lines.last ?? ""))
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    @Test func resumeFromASecondProcessAfterSIGKILL() async throws {
        // A server of its own: a client killed mid-PATCH leaves tuspyserver holding the
        // upload's lock for up to 30 s, stalling its other requests meanwhile.
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let size = 200 << 20
        let path = try makeRandomFile(size: size, seed: 22)
        defer { TempFiles.remove(path) }

        // The first process: killed with SIGKILL once the upload exists and is under way.
        let first = try ToolProcess.startBlobstream(["upload", "--chunk-size", "1048576", path, server.filesURL.absoluteString])
        let firstLine = try #require(await offThePool { first.firstLine(timeout: 60) }, "the upload URL was not printed")
        let uploadURL = try #require(URL(string: firstLine))
        try await Task.sleep(for: .milliseconds(150))
        first.send(SIGKILL)
        #expect(await first.finished().signal == SIGKILL)
        let offsetAfterKill = try await TusClient(endpoint: server.filesURL).status(of: uploadURL).offset
        #expect(offsetAfterKill < Int64(size), "the first process finished before it was killed: nothing left to resume")

        // The second process continues from the server's offset.
        let second = try await blobstream(["upload", "--resume", uploadURL.absoluteString, path, server.filesURL.absoluteString])

        #expect(second.status == 0, "\(second.standardError)")
        let lines = second.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == uploadURL.absoluteString)
        #expect(lines.last == uploadURL.absoluteString)
        #expect(try tusStoredCopyMatches(uploadURL, file: path, dataRoot: server.dataDirectory))
    }

    @Test func putSendsTheFileAndRefusesARedirect() async throws {
        try TestServers.requireNginx()
        let path = try makeRandomFile(size: 5_000_000, seed: 23)
        defer { TempFiles.remove(path) }
        let name = "cli-put-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let target = TestServers.uploadURL.appendingPathComponent(name).absoluteString

        let put = try await blobstream(["put", path, target])
        #expect(put.status == 0, "\(put.standardError)")
        #expect(put.standardOutput == "201 \(target)\n")
        #expect(try TempFiles.sha256(ofFileAtPath: TestServers.uploadRoot + "/" + name) == TempFiles.sha256(ofFileAtPath: path))

        let redirected = try await blobstream(["put", path, TestServers.redirectPutURL.appendingPathComponent(name).absoluteString])
        #expect(redirected.status == 1)
        #expect(redirected.standardError.contains("307"))

        let notHTTP = try await blobstream(["put", path, "ftp://127.0.0.1/\(name)"])
        #expect(notHTTP.status == 64)
        #expect(notHTTP.standardError.contains("ftp://127.0.0.1/\(name)"))
    }

    @Test func failuresAreClear() async throws {
        try TestServers.requireTus()
        let missing = try await blobstream(["upload", "/nonexistent/blob", TestServers.tusFilesURL.absoluteString])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("/nonexistent/blob"))

        let usage = try await blobstream(["upload", "/nonexistent/blob"])
        #expect(usage.status == 64)

        let gone = try await blobstream(["upload", "--resume", TestServers.tusFilesURL.absoluteString + "0123456789abcdef0123456789abcdef",
                                   "/etc/hostname", TestServers.tusFilesURL.absoluteString])
        #expect(gone.status == 1)
        #expect(gone.standardError.contains("404") || gone.standardError.contains("gone"))
    }

    /// Resuming an upload with another, smaller file says that the file does not match,
    /// instead of the source's "invalid offset" for the server's offset beyond its end.
    @Test func resumingWithAnotherFileSaysItDoesNotMatch() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000, seed: 24)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(
            length: 500_000, metadata: ["filename": (path as NSString).lastPathComponent, "filetype": "x/y"])
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(try await sendRawPatch(Data(count: 200_000), at: 0, to: uploadURL) == 204)

        let result = try await blobstream(["upload", "--resume", uploadURL.absoluteString, path, TestServers.tusFilesURL.absoluteString])

        #expect(result.status == 1)
        #expect(result.standardError.contains("\(uploadURL): the source does not match this upload: the upload is 500000 "
            + "bytes long, the source 100000 bytes"), "\(result.standardError)")
        #expect(!result.standardError.contains("invalid offset"))
        #expect(try await client.status(of: uploadURL).offset == 200_000)
    }

    /// A web server's error page never reaches the terminal, and an upload endpoint that is
    /// no tus server is named as such.
    @Test func aWebServerIsReportedWithoutItsErrorPage() async throws {
        try TestServers.requireNginx()
        let path = try makeRandomFile(size: 1000, seed: 25)
        defer { TempFiles.remove(path) }

        let upload = try await blobstream(["upload", path, TestServers.nginxURL.absoluteString])
        #expect(upload.status == 1)
        #expect(upload.standardError.contains("POST \(TestServers.nginxURL): HTTP 403 Forbidden: \(TestServers.nginxURL) "
            + "does not answer like a tus server"), "\(upload.standardError)")

        let target = TestServers.nginxURL.appendingPathComponent("not-here-\(UUID().uuidString).bin").absoluteString
        let put = try await blobstream(["put", path, target])
        #expect(put.status == 1)
        #expect(put.standardError.contains("PUT \(target): HTTP 405 Method Not Allowed"), "\(put.standardError)")
        for result in [upload, put] {
            #expect(!result.standardError.contains("<"), "\(result.standardError)")
            #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)")
        }
    }
}
