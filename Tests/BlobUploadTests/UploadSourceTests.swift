import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// Sources other than local files: an asset store and HTTP servers, streamed into a tus
/// server without touching the disk.
@Suite struct UploadSourceTests {
    @Test func uploadsAnAssetByURL() async throws {
        try TestServers.requireTus()
        let directory = try TempFiles.makeDirectory(prefix: "upload-assets")
        defer { TempFiles.remove(directory) }
        let path = try makeRandomFile(size: 2 * 1024 * 1024 + 3, seed: 31)
        defer { TempFiles.remove(path) }
        let store = try DirectoryAssetStore(directory: directory)
        let identifier = try store.import(fileAt: path)
        let registry = BlobURLRegistry()
        registry.register(assetStore: store)
        let url = try #require(AssetURL.url(identifier: identifier))
        var options = TusUploadOptions()
        options.chunkSize = 512 * 1024
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await TusClient(endpoint: TestServers.tusFilesURL)
            .upload(try UploadSource.url(url, registry: registry), options: options) { log.append($0) }
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func uploadsAnHTTPBlobWithoutDeadlocking(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireNginx()
        try TestServers.requireTus()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "upload-source", size: 3 * 1024 * 1024 + 11, seed: 32)
        defer { TempFiles.remove(path) }
        let url = try TestServers.nginxURL(forFileAtPath: path)
        // Over URLSession too: the source downloads through the queue URLSession shares with
        // the uploads, which is fine because each chunk is read before its PATCH starts.
        let source = UploadSource.dataSource(name: url.absoluteString) {
            HTTPDataSource(url: url, configuration: .init(transport: transport))
        }
        var options = TusUploadOptions()
        options.chunkSize = 1024 * 1024
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: options) { log.append($0) }
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
        let status = try await TusClient(endpoint: TestServers.tusFilesURL).status(of: result.uploadURL)
        #expect(status.metadata["filename"] == url.lastPathComponent)
    }

    /// Resuming an HTTP source from a server that ignores Range: the source skips to the
    /// offset, and the bytes still end up identical.
    @Test func resumesAnHTTPBlobFromAServerWithoutRanges() async throws {
        try TestServers.requireNginx()
        try TestServers.requireTus()
        let size = 2 * 1024 * 1024
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "upload-norange", size: size, seed: 33)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        // The filename the source is uploaded as: resuming compares it.
        let filename = (path as NSString).lastPathComponent
        let uploadURL = try await client.create(length: Int64(size), metadata: ["filename": filename, "filetype": "b"])
        defer { TestServers.removeUploads([uploadURL]) }
        let head = Data(TempFiles.pseudoRandomBytes(count: 1_000_000, seed: 33))
        #expect(try await sendRawPatch(head, at: 0, to: uploadURL) == 204)
        let source = try UploadSource.url(TestServers.nginxURL(forFileAtPath: path, route: .noRange))
        let result = try await client.upload(source, resuming: uploadURL)
        #expect(result.startOffset == 1_000_000)
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    @Test func aSourceOfUnknownLengthCannotBeCreated() async throws {
        try TestServers.requireNginx()
        try TestServers.requireTus()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "upload-chunked", size: 100_000, seed: 34)
        defer { TempFiles.remove(path) }
        let url = try TestServers.nginxURL(forFileAtPath: path, route: .chunked)
        await #expect(throws: BlobUploadError.lengthUnknown(source: url.absoluteString)) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(try UploadSource.url(url))
        }
    }

    @Test func anUnknownSchemeIsASourceError() {
        let url = URL(string: "nosuch://blob")!
        #expect {
            _ = try UploadSource.url(url, registry: BlobURLRegistry())
        } throws: { error in
            guard case .source(.unsupportedURL(let named, _))? = error as? BlobUploadError else { return false }
            return named == url.absoluteString
        }
    }

    /// The one composition that cannot work on Linux: a synchronous stream of a URLSession
    /// download as the body of a URLSession upload. It fails at once instead of hanging. (Over
    /// the package's own client, the body is read on a thread of its own: see the next test.)
    @Test func aStreamedPutOfAURLSessionDownloadFailsFast() async throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "upload-deadlock", size: 1_000_000, seed: 35)
        defer { TempFiles.remove(path) }
        let name = "deadlock-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let download = HTTPDataSource(
            url: try TestServers.nginxURL(forFileAtPath: path), configuration: .init(transport: .urlSession))
        // Had it waited, it would end in a timeout, not with this error.
        await #expect {
            _ = try await StreamedUploader(transport: .urlSession).upload(
                BlobInputStream(dataSource: download), to: TestServers.uploadURL.appendingPathComponent(name))
        } throws: { error in
            guard case .source(.wouldDeadlock)? = error as? BlobUploadError else { return false }
            return true
        }
    }

    /// The same stream as the body of an `http:` upload over the package's own client, which
    /// reads it on a thread of its own, not on URLSession's queue: it goes through whole.
    @Test func aStreamedPutOfAURLSessionDownloadOverTheOwnClientGoesThrough() async throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "upload-own-client", size: 1_000_000, seed: 36)
        defer { TempFiles.remove(path) }
        let name = "own-client-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let download = HTTPDataSource(
            url: try TestServers.nginxURL(forFileAtPath: path), configuration: .init(transport: .urlSession))
        let response = try await StreamedUploader(transport: .automatic).upload(
            BlobInputStream(dataSource: download), to: TestServers.uploadURL.appendingPathComponent(name),
            expectedLength: 1_000_000)
        #expect(response.bytesSent == 1_000_000)
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path))
    }
}
