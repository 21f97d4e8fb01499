@testable import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import SystemCalls
import Testing

/// Resuming a tus upload whose bytes come from an HTTP server: the source's first GET starts
/// at the server's offset. It used to start at byte 0, and the first read cancelled it and
/// asked again: one wasted request on every resumed HTTP-sourced upload.
@Suite struct TusHTTPSourceResumeTests {
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aResumedUploadFromAnHTTPSourceMakesOneGet(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireTus()
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "tus-http-resume")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        let size = 2 * 1024 * 1024 + 7
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 31)
        let url = try TestServers.nginxURL(forFileAtPath: path)

        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(length: Int64(size), metadata: ["filename": "blob.bin", "filetype": "application/octet-stream"])
        defer { TestServers.removeUploads([uploadURL]) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try await sendRawPatch(bytes.prefix(700_001), at: 0, to: uploadURL) == 204)

        // Every source the upload makes, to count their requests afterwards. The read-ahead
        // buffer holds the rest of the blob, so URLSession, too, needs one request for it.
        let sources = LockedValue<[HTTPDataSource]>([])
        let source = UploadSource.dataSource(name: url.absoluteString) {
            let made = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 8 << 20, transport: transport))
            sources.withLock { $0.append(made) }
            return made
        }
        let result = try await client.upload(source, resuming: uploadURL)
        #expect(result.startOffset == 700_001)
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
        let statistics = sources.withLock { $0.map(\.statistics) }
        #expect(statistics.map(\.requests) == [1], "one source, whose one GET starts at the server's offset")
        #expect(statistics.map(\.bytesReceived) == [Int64(size - 700_001)], "no byte before the offset is downloaded")
    }

    /// The stream that learns the length opens at the server's offset; a source that ends
    /// before it still fails with the length mismatch, not with the server's 416.
    @Test func anHTTPSourceShorterThanTheServersOffsetIsALengthMismatch() async throws {
        try TestServers.requireTus()
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "tus-http-short")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 100_000, seed: 32)
        let url = try TestServers.nginxURL(forFileAtPath: path)

        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(
            length: 500_000, metadata: ["filename": "blob.bin", "filetype": "application/octet-stream"])
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(try await sendRawPatch(Data(count: 200_000), at: 0, to: uploadURL) == 204)

        let expected = BlobUploadError.lengthMismatch(url: uploadURL.absoluteString, serverLength: 500_000, sourceLength: 100_000)
        await #expect(throws: expected) {
            _ = try await client.upload(.dataSource(name: url.absoluteString) { HTTPDataSource(url: url) }, resuming: uploadURL)
        }
        #expect(try await client.status(of: uploadURL).offset == 200_000)
    }
}
