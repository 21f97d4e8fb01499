import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// Resuming compares the upload with the source before a byte is read at the server's offset
/// or sent: another file must never be continued, mixing two blobs into one.
@Suite struct TusResumeMatchTests {
    /// An upload of `length` bytes named `filename`, with its first `sent` bytes (zeros) stored.
    private func partialUpload(length: Int64, filename: String, sent: Int) async throws -> URL {
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(length: length, metadata: ["filename": filename, "filetype": "image/jpeg"])
        if sent > 0 {
            #expect(try await sendRawPatch(Data(count: sent), at: 0, to: uploadURL) == 204)
        }
        return uploadURL
    }

    /// The bug: the reader was sent to the server's offset first, beyond the end of a smaller
    /// file, and the error was the source's "invalid offset", which says nothing of the cause.
    @Test func aSmallerFileThanTheServerHoldsIsALengthMismatch() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let uploadURL = try await partialUpload(length: 500_000, filename: (path as NSString).lastPathComponent, sent: 200_000)
        defer { TestServers.removeUploads([uploadURL]) }

        let expected = BlobUploadError.lengthMismatch(url: uploadURL.absoluteString, serverLength: 500_000, sourceLength: 100_000)
        await #expect(throws: expected) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), resuming: uploadURL)
        }
        #expect(expected.description == "\(uploadURL): the source does not match this upload: the upload is 500000 bytes "
            + "long, the source 100000 bytes (another blob, or one that changed since the upload started); resume with the "
            + "blob the upload was started with, or start a new upload")
        #expect(try await TusClient(endpoint: TestServers.tusFilesURL).status(of: uploadURL).offset == 200_000)
    }

    /// The upload records the version of the file it read in its metadata; a resume finds
    /// the same file (unchanged) and continues, or a file rewritten since (same name, same
    /// length) and refuses before a byte is read at the server's offset or sent: continuing
    /// would have mixed two versions, and with every byte already on the server, have
    /// reported the other version's upload complete. (Scripted servers: tuspyserver keeps
    /// only `filename` and `filetype`, so with it no version can be checked.)
    @Test func aFileRewrittenSinceTheUploadStartedIsRefusedOnResume() async throws {
        let size = 300_000
        let path = try makeRandomFile(size: size, seed: 1)
        defer { TempFiles.remove(path) }
        let name = (path as NSString).lastPathComponent
        let creating = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.patched(Int64(size)),
        ]])
        _ = try await TusClient(endpoint: ScriptedTus.endpoint(creating)).upload(.file(path: path), options: ScriptedTus.options(chunkSize: size))
        let metadataLine = try #require(creating.requests[1].split(separator: "\r\n").first { $0.lowercased().hasPrefix("upload-metadata:") })
        let metadata = Self.decode(String(metadataLine.dropFirst("upload-metadata:".count)))
        let version = try #require(metadata["blobstream-source-version"])
        #expect(!version.isEmpty)

        func resumingServer() throws -> ScriptedHTTPServer {
            try ScriptedHTTPServer(connections: [[
                ScriptedTus.options,
                ScriptedTus.head(offset: 100_000, length: Int64(size)).replacingOccurrences(
                    of: "\r\n\r\n",
                    with: "\r\nUpload-Metadata: filename \(Self.base64(name)),blobstream-source-version \(Self.base64(version))\r\n\r\n"),
                ScriptedTus.patched(Int64(size)),
            ]])
        }
        let unchanged = try resumingServer()
        let resumed = try await TusClient(endpoint: ScriptedTus.endpoint(unchanged)).upload(
            .file(path: path), resuming: URL(string: "http://127.0.0.1:\(unchanged.port)/files/a")!, options: ScriptedTus.options(chunkSize: size))
        #expect(resumed.startOffset == 100_000 && resumed.bytesSent == Int64(size - 100_000))

        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 2)
        let rewritten = try resumingServer()
        await #expect {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(rewritten)).upload(
                .file(path: path), resuming: URL(string: "http://127.0.0.1:\(rewritten.port)/files/a")!, options: ScriptedTus.options(chunkSize: size))
        } throws: { error in
            guard case .source(.sourceChanged(path, _, let reason))? = error as? BlobUploadError else {
                Issue.record("expected sourceChanged, got \(error)")
                return false
            }
            return reason.contains(version)
        }
        #expect(rewritten.requests.count == 2, "nothing is sent after the HEAD")
    }

    private static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    private static func decode(_ header: String) -> [String: String] {
        var pairs: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ")
            if parts.count == 2, let data = Data(base64Encoded: String(parts[1])) {
                pairs[String(parts[0])] = String(decoding: data, as: UTF8.self)
            }
        }
        return pairs
    }

    @Test func aFileOfAnotherNameIsAFilenameMismatchAndNothingIsSent() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let name = (path as NSString).lastPathComponent
        let uploadURL = try await partialUpload(length: 100_000, filename: "holiday.jpg", sent: 0)
        defer { TestServers.removeUploads([uploadURL]) }

        let expected = BlobUploadError.filenameMismatch(
            url: uploadURL.absoluteString, uploadFilename: "holiday.jpg", sourceFilename: name)
        await #expect(throws: expected) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), resuming: uploadURL)
        }
        #expect(expected.description == "\(uploadURL): the source does not match this upload: the upload is of "
            + "\"holiday.jpg\", the source is named \"\(name)\"; resume with the file the upload was started with, or give "
            + "its name as the filename (TusUploadOptions.filename, upload --filename) if it was only renamed, or start a new upload")
        #expect(try await TusClient(endpoint: TestServers.tusFilesURL).status(of: uploadURL).offset == 0)
    }

    /// The filename the caller gives is the name the upload carries: a renamed file resumes
    /// under its old name.
    @Test func theCallersFilenameIsComparedInstead() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let uploadURL = try await partialUpload(length: 100_000, filename: "holiday.jpg", sent: 0)
        defer { TestServers.removeUploads([uploadURL]) }
        var options = TusUploadOptions()
        options.filename = "holiday.jpg"

        let result = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), resuming: uploadURL, options: options)

        #expect(result.bytesSent == 100_000)
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
        options.filename = "other.jpg"
        await #expect(throws: BlobUploadError.filenameMismatch(
            url: uploadURL.absoluteString, uploadFilename: "holiday.jpg", sourceFilename: "other.jpg")) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), resuming: uploadURL, options: options)
        }
    }

    /// `blobstream upload --filename`: the command line's way to resume a renamed file.
    @Test func theCommandLinesFilenameResumesARenamedFile() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let uploadURL = try await partialUpload(length: 100_000, filename: "holiday.jpg", sent: 0)
        defer { TestServers.removeUploads([uploadURL]) }
        let endpoint = TestServers.tusFilesURL.absoluteString
        let refused = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", "--resume", uploadURL.absoluteString, path, endpoint])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("--filename"), "\(refused.standardError)")
        let resumed = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["upload", "--resume", uploadURL.absoluteString, "--filename", "holiday.jpg", path, endpoint])
        #expect(resumed.status == 0, "\(resumed.standardError)")
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    /// An upload whose creator sent no filename (tuspyserver requires one; a scripted server
    /// answers the HEAD without `Upload-Metadata`) can only be compared by length.
    @Test func anUploadWithoutAFilenameIsComparedByLengthOnly() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.head(offset: 1000, length: 3000), ScriptedTus.patched(2000),
            ScriptedTus.patched(3000),
        ]])
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(3000), resuming: URL(string: "http://127.0.0.1:\(server.port)/files/a")!,
            options: ScriptedTus.options(chunkSize: 1000))

        #expect(result.startOffset == 1000)
        #expect(result.bytesSent == 2000)
    }
}
