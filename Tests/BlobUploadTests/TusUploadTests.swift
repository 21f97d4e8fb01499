import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

@Suite struct TusUploadTests {
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func uploadsAFileByteIdentical(transport: TusClient.Transport) async throws {
        try TestServers.requireTus()
        let size = 5 * 1024 * 1024 + 123
        let path = try makeRandomFile(size: size)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = 1024 * 1024
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        #expect(result.length == Int64(size))
        #expect(result.startOffset == 0)
        #expect(result.bytesSent == Int64(size))
        #expect(result.checksumAlgorithm == nil)
        // The URL is announced first, before any byte is sent, so a caller can save it.
        #expect(log.all.first == .created(uploadURL: result.uploadURL))
        #expect(log.confirmedOffsets == [0, 1, 2, 3, 4, 5].map { Int64($0) << 20 } + [Int64(size)])
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
        let status = try await client.status(of: result.uploadURL)
        #expect(status == TusUploadStatus(
            offset: Int64(size), length: Int64(size),
            metadata: ["filename": (path as NSString).lastPathComponent, "filetype": "application/octet-stream"]))
    }

    @Test func uploads256MiBWithChecksumsByteIdentical() async throws {
        try TestServers.requireChecksumTus()
        let size = 256 * 1024 * 1024
        let path = try makeRandomFile(size: size, seed: 256)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.checksumTusFilesURL)
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path)) { log.append($0) }
        #expect(result.length == Int64(size))
        #expect(result.retries == 0)
        #expect(result.checksumAlgorithm == "sha256")
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    @Test func discoversTheServersCapabilities() async throws {
        try TestServers.requireChecksumTus()
        let capabilities = try await TusClient(endpoint: TestServers.checksumTusFilesURL).discover()
        #expect(capabilities.versions == ["1.0.0"])
        #expect(capabilities.extensions.isSuperset(of: ["creation", "termination", "checksum", "expiration"]))
        #expect(capabilities.checksumAlgorithms == ["sha1", "sha256", "md5"])
        #expect(capabilities.maxSize != nil)
    }

    @Test func uploadsAnEmptyFile() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 0)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path)) { log.append($0) }
        #expect(result.length == 0)
        #expect(result.bytesSent == 0)
        #expect(try await client.status(of: result.uploadURL).offset == 0)
    }

    /// A source that breaks after a few chunks leaves a resumable upload; resuming it sends
    /// only the rest, from the server's offset, and the stored bytes are the source's.
    @Test func resumesAnInterruptedUploadFromTheServersOffset() async throws {
        try TestServers.requireTus()
        let size = 3 * 1024 * 1024 + 5
        let path = try makeRandomFile(size: size, seed: 3)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        var options = TusUploadOptions()
        options.chunkSize = 512 * 1024
        // The same length, but the stream ends after 1.25 MiB.
        let truncated = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(1280 * 1024)
        let broken = UploadSource.streams(name: path, length: Int64(size)) { InputStream(data: truncated) }
        let first = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(first.createdURLs) }
        await #expect {
            _ = try await client.upload(broken, options: options) { first.append($0) }
        } throws: { error in
            guard case .source(.unexpectedEnd(path, 1280 * 1024, Int64(size)))? = error as? BlobUploadError else {
                return false
            }
            return true
        }
        let uploadURL = try #require(first.createdURLs.first)
        #expect(try await client.status(of: uploadURL).offset == 1024 * 1024)

        let second = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), resuming: uploadURL, options: options) { second.append($0) }
        #expect(second.all.first == .resumed(uploadURL: uploadURL, offset: 1024 * 1024))
        #expect(result.startOffset == 1024 * 1024)
        #expect(result.bytesSent == Int64(size - 1024 * 1024))
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    /// A plain `InputStream` cannot seek: the upload reopens it and skips to the offset.
    @Test func resumesWithAPlainInputStreamBySkipping() async throws {
        try TestServers.requireTus()
        let size = 2 * 1024 * 1024
        let path = try makeRandomFile(size: size, seed: 4)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let uploadURL = try await client.create(length: Int64(size), metadata: ["filename": "plain", "filetype": "x/y"])
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(try await sendRawPatch(bytes.prefix(700_000), at: 0, to: uploadURL) == 204)
        let plain = UploadSource.streams(name: "plain", length: Int64(size)) { InputStream(fileAtPath: path)! }
        let result = try await client.upload(plain, resuming: uploadURL)
        #expect(result.startOffset == 700_000)
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }

    @Test func resumingACompleteUploadSendsNothing() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let first = try await client.upload(.file(path: path))
        defer { TestServers.removeUploads([first.uploadURL]) }
        let again = try await client.upload(.file(path: path), resuming: first.uploadURL)
        #expect(again.bytesSent == 0)
        #expect(again.startOffset == 100_000)
    }

    @Test func resumingWithAnotherBlobIsALengthMismatch() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 100_000)
        defer { TempFiles.remove(path) }
        let other = try makeRandomFile(size: 99_999)
        defer { TempFiles.remove(other) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(length: 100_000, metadata: ["filename": "a", "filetype": "b"])
        defer { TestServers.removeUploads([uploadURL]) }
        await #expect(throws: BlobUploadError.lengthMismatch(
            url: uploadURL.absoluteString, serverLength: 100_000, sourceLength: 99_999)) {
            _ = try await client.upload(.file(path: other), resuming: uploadURL)
        }
    }

    @Test func aTerminatedUploadIsGone() async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 300_000)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let uploadURL = try await client.create(length: 300_000, metadata: ["filename": "a", "filetype": "b"])
        try await client.terminate(uploadURL)
        await #expect(throws: BlobUploadError.uploadGone(url: uploadURL.absoluteString, statusCode: 404)) {
            _ = try await client.upload(.file(path: path), resuming: uploadURL)
        }
        await #expect(throws: BlobUploadError.uploadGone(url: uploadURL.absoluteString, statusCode: 404)) {
            try await client.terminate(uploadURL)
        }
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aGoneUploadStartsOverWhenAsked(transport: TusClient.Transport) async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 300_000)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, transport: transport)
        let goneURL = try await client.create(length: 300_000, metadata: ["filename": "a", "filetype": "b"])
        try await client.terminate(goneURL)
        var options = TusUploadOptions()
        options.restartIfGone = true
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path), resuming: goneURL, options: options) { log.append($0) }
        #expect(result.uploadURL != goneURL)
        #expect(log.all.prefix(2) == [.restarting(goneURL: goneURL), .created(uploadURL: result.uploadURL)])
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    /// The upload is deleted between two chunks: the next PATCH finds it gone.
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func anUploadDeletedMidwayIsGone(transport: TusClient.Transport) async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 1024 * 1024)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = 256 * 1024
        let created = EventLog<URL>()
        // Deleted by the test itself, unless it failed before.
        defer { TestServers.removeUploads(created.all) }
        options.chunkBodyHook = { offset, body in
            // Deleted just before the 3rd PATCH is sent.
            if offset == 512 * 1024, let url = created.all.first {
                #expect((try? await deleteUpload(url)) == 204)
            }
            return body
        }
        let log = EventLog<TusUploadEvent>()
        await #expect {
            _ = try await client.upload(.file(path: path), options: options) { event in
                if case .created(let url) = event { created.append(url) }
                log.append(event)
            }
        } throws: { error in
            guard case .uploadGone(let url, 404)? = error as? BlobUploadError else { return false }
            return url == created.all.first?.absoluteString
        }
        #expect(log.confirmedOffsets == [0, 256 * 1024, 512 * 1024])
    }

    @Test func refusesAnUploadLargerThanTheServerAccepts() async throws {
        try TestServers.requireTus()
        let capabilities = try await TusClient(endpoint: TestServers.tusFilesURL).discover()
        let maxSize = try #require(capabilities.maxSize)
        let huge = UploadSource.streams(name: "huge", length: maxSize + 1) { InputStream(data: Data()) }
        await #expect(throws: BlobUploadError.tooLarge(
            endpoint: TestServers.tusFilesURL.absoluteString, length: maxSize + 1, maxSize: maxSize)) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(huge)
        }
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func cancellationStopsTheUploadAndLeavesItResumable(transport: TusClient.Transport) async throws {
        try TestServers.requireTus()
        let size = 4 * 1024 * 1024
        let path = try makeRandomFile(size: size, seed: 9)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = 256 * 1024
        let created = EventLog<URL>()
        defer { TestServers.removeUploads(created.all) }
        let upload = Task {
            try await client.upload(.file(path: path), options: options) { event in
                if case .created(let url) = event { created.append(url) }
                if case .progress(let progress) = event, progress.completedBytes >= 1024 * 1024 {
                    withUnsafeCurrentTask { $0?.cancel() }
                }
            }
        }
        await #expect(throws: BlobUploadError.cancelled) { _ = try await upload.value }
        let uploadURL = try #require(created.all.first)
        let status = try await client.status(of: uploadURL)
        #expect(status.offset >= 1024 * 1024 && status.offset < Int64(size))
        let result = try await client.upload(.file(path: path), resuming: uploadURL, options: options)
        #expect(result.startOffset == status.offset)
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
    }
}
