import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import SystemCalls
import Testing

/// A source that changes while it is uploaded fails the upload, and the server never gets
/// the end of it: the last bytes go out only after the source confirmed its version.
@Suite struct UploadSourceChangeTests {
    private static let bytes = Data((0..<(256 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    /// In-memory bytes whose version check, made before the end of data, always finds a change:
    /// a file rewritten in place after its last block was read.
    final class ChangedBeforeTheEnd: BlobDataSource, @unchecked Sendable {
        private let memory: MemoryDataSource
        let checks = LockedValue(0)

        init(_ data: Data, name: String) {
            memory = MemoryDataSource(data: data, name: name)
        }

        var resourceName: String { memory.resourceName }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            completion(.success(BlobSourceDescription(length: Int64(memory.data.count), version: "v1")))
        }

        func read(
            into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
        ) -> BlobSourceReadResult {
            memory.read(into: buffer, at: offset, whenReadable: whenReadable)
        }

        func close() {}

        func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
            checks.withLock { $0 += 1 }
            return .sourceChanged(resource: resourceName, offset: offset, reason: "rewritten in place")
        }
    }

    /// In-memory bytes of one version, whose reads fail from `failingFrom` on (a dropped
    /// connection, a read error).
    final class Versioned: BlobDataSource, @unchecked Sendable {
        private let memory: MemoryDataSource
        private let version: String
        private let failingFrom: Int64?

        init(_ data: Data, name: String, version: String, failingFrom: Int64?) {
            memory = MemoryDataSource(data: data, name: name)
            self.version = version
            self.failingFrom = failingFrom
        }

        var resourceName: String { memory.resourceName }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            completion(.success(BlobSourceDescription(length: Int64(memory.data.count), version: version)))
        }

        func read(
            into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
        ) -> BlobSourceReadResult {
            guard let failingFrom else { return memory.read(into: buffer, at: offset, whenReadable: whenReadable) }
            if offset >= failingFrom {
                return .failed(.sourceFailed(resource: resourceName, reason: "the connection was reset"))
            }
            // A read that reaches the failing offset gets the bytes before it, whatever its size:
            // the next read fails.
            let before = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), failingFrom - offset))))
            return memory.read(into: before, at: offset, whenReadable: whenReadable)
        }

        func close() {}
    }

    private static func isChange(_ error: any Error) -> Bool {
        guard case .source(.sourceChanged(_, _, "rewritten in place"))? = error as? BlobUploadError else { return false }
        return true
    }

    /// One chunk (the final PATCH is the first) and four (the last one read ahead while the
    /// third is sent).
    @Test(arguments: [512 * 1024, 64 * 1024])
    func theTusUploadFailsAndTheLastChunkIsNeverSent(chunkSize: Int) async throws {
        try TestServers.requireTus()
        let name = "changed-\(chunkSize)"
        let source = UploadSource.dataSource(name: name) { ChangedBeforeTheEnd(Self.bytes, name: name) }
        var options = TusUploadOptions()
        options.chunkSize = chunkSize
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        await #expect {
            _ = try await client.upload(source, options: options) { log.append($0) }
        } throws: { Self.isChange($0) }
        let uploadURL = try #require(log.createdURLs.first)
        let status = try await client.status(of: uploadURL)
        // The last chunk never left: the server has at most the chunks before it.
        #expect(status.offset <= Int64(Self.bytes.count - min(chunkSize, Self.bytes.count)))
    }

    @Test func theStreamedPutFailsAndNginxStoresNothing() async throws {
        try TestServers.requireNginx()
        let name = "changed-\(UUID().uuidString).bin"
        let target = TestServers.uploadURL.appendingPathComponent(name)
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let source = ChangedBeforeTheEnd(Self.bytes, name: name)
        await #expect {
            _ = try await StreamedUploader().upload(
                BlobInputStream(dataSource: source), to: target, expectedLength: Int64(Self.bytes.count))
        } throws: { Self.isChange($0) }
        #expect(!FileManager.default.fileExists(atPath: stored))
        #expect(source.checks.withLock { $0 } >= 1)
    }

    /// A body that fails at its last block (as a stream does when its source changed) must
    /// end the transfer without the chunked body's last chunk, so nginx stores nothing.
    @Test(arguments: [Transport.automatic, .urlSession])
    func aStreamedPutWhoseLastBlockFailsStoresNothing(transport: Transport) async throws {
        try TestServers.requireNginx()
        let name = "failing-\(UUID().uuidString).bin"
        let target = TestServers.uploadURL.appendingPathComponent(name)
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let source = Versioned(
            Self.bytes, name: name, version: "v1", failingFrom: Int64(Self.bytes.count - 64 * 1024))
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(
                BlobInputStream(dataSource: source), to: target, expectedLength: Int64(Self.bytes.count))
        } throws: { error in
            guard case .source(.sourceFailed(name, _))? = error as? BlobUploadError else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: stored))
    }

    /// The first stream fails while the second chunk is read ahead; the stream opened next
    /// finds another version of the blob. Sending it would mix two versions in one upload.
    @Test func aStreamReopenedOnAnotherVersionFailsTheUpload() async throws {
        try TestServers.requireTus()
        let made = LockedValue(0)
        let newer = Data(Self.bytes.reversed())
        let source = UploadSource.dataSource(name: "versions") {
            let number = made.withLock { count -> Int in
                count += 1
                return count
            }
            return Versioned(
                number == 1 ? Self.bytes : newer, name: "versions", version: "v\(number)",
                failingFrom: number == 1 ? 64 * 1024 : nil)
        }
        var options = TusUploadOptions()
        options.chunkSize = 64 * 1024
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        await #expect {
            _ = try await client.upload(source, options: options) { log.append($0) }
        } throws: { error in
            guard case .source(.sourceChanged(resource: "versions", _, let reason))? = error as? BlobUploadError else {
                return false
            }
            return reason.contains("v1") && reason.contains("v2")
        }
        #expect(made.withLock { $0 } == 2)
    }
}
