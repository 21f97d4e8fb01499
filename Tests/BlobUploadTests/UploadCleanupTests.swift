import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// `TestServers.removeUploads`, which every test uses to leave the shared servers as it
/// found them, really removes what it is given.
@Suite struct UploadCleanupTests {
    @Test(arguments: [TestServers.tusFilesURL, TestServers.checksumTusFilesURL])
    func aTusUploadIsTerminated(endpoint: URL) async throws {
        try TestServers.requireTus()
        try TestServers.requireChecksumTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: endpoint)
        let result = try await client.upload(.file(path: path))
        let stored = TestServers.tusDataPath(forUpload: result.uploadURL)
        #expect(FileManager.default.fileExists(atPath: stored))

        TestServers.removeUploads([result.uploadURL])

        #expect(!FileManager.default.fileExists(atPath: stored))
        #expect(!FileManager.default.fileExists(atPath: stored + ".info"))
        await #expect(throws: BlobUploadError.uploadGone(url: result.uploadURL.absoluteString, statusCode: 404)) {
            _ = try await client.status(of: result.uploadURL)
        }
    }

    @Test func aFilePutToNginxIsDeleted() async throws {
        try TestServers.requireNginx()
        let target = TestServers.uploadURL.appendingPathComponent("cleanup-\(UUID().uuidString)/a b.bin")
        let stored = TestServers.uploadRoot + "/" + target.deletingLastPathComponent().lastPathComponent + "/a b.bin"
        defer { TempFiles.remove((stored as NSString).deletingLastPathComponent) }
        _ = try await StreamedUploader().upload(InputStream(data: Data("hello".utf8)), to: target)
        #expect(FileManager.default.fileExists(atPath: stored))

        TestServers.removeUploads([target])

        #expect(!FileManager.default.fileExists(atPath: stored))
    }

    /// URLs of other servers, or outside the upload folders, are left alone.
    @Test func otherURLsAreLeftAlone() throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "cleanup-keep", size: 10)
        defer { TempFiles.remove(path) }

        TestServers.removeUploads([try TestServers.nginxURL(forFileAtPath: path)])

        #expect(FileManager.default.fileExists(atPath: path))
    }
}
