import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// A source whose declared length is not its real length must fail the upload, never end
/// in an upload reported complete with a truncated or padded blob.
@Suite struct TusLengthTests {
    private static let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    private static var options: TusUploadOptions {
        var options = TusUploadOptions()
        options.chunkSize = 64 * 1024
        return options
    }

    @Test(arguments: [Int64(200_000), 400_000])
    func aBlobStreamThatContradictsTheDeclaredLengthFails(declared: Int64) async throws {
        try TestServers.requireTus()
        let source = UploadSource.dataSource(name: "declared-\(declared)", length: declared) {
            MemoryDataSource(data: Self.bytes)
        }
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        await #expect(throws: BlobUploadError.lengthMismatch(
            url: "declared-\(declared)", serverLength: declared, sourceLength: Int64(Self.bytes.count))) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: Self.options) { log.append($0) }
        }
        // Found before anything was created on the server.
        #expect(log.createdURLs.isEmpty)
    }

    @Test func aPlainStreamLongerThanDeclaredFailsBeforeItsLastChunk() async throws {
        try TestServers.requireTus()
        let declared = Int64(200_000)
        let source = UploadSource.streams(name: "longer", length: declared) { InputStream(data: Self.bytes) }
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        await #expect(throws: BlobUploadError.source(.sourceChanged(
            resource: "longer", offset: declared,
            reason: "the stream yields more than the declared length of \(declared) bytes"))) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: Self.options) { log.append($0) }
        }
        // The last chunk was never sent: the server's upload stays incomplete.
        let uploadURL = try #require(log.createdURLs.first)
        let status = try await TusClient(endpoint: TestServers.tusFilesURL).status(of: uploadURL)
        #expect(status.offset < declared)
        #expect(status.length == declared)
    }

    @Test func aPlainStreamShorterThanDeclaredFails() async throws {
        try TestServers.requireTus()
        let declared = Int64(400_000)
        let source = UploadSource.streams(name: "shorter", length: declared) { InputStream(data: Self.bytes) }
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        await #expect(throws: BlobUploadError.source(.unexpectedEnd(
            resource: "shorter", offset: Int64(Self.bytes.count), expectedLength: declared))) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: Self.options) { log.append($0) }
        }
    }

    /// A plain stream of exactly the declared length still uploads.
    @Test func aPlainStreamOfTheDeclaredLengthUploads() async throws {
        try TestServers.requireTus()
        let source = UploadSource.streams(name: "exact", length: Int64(Self.bytes.count)) { InputStream(data: Self.bytes) }
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: Self.options) { log.append($0) }
        #expect(result.length == Int64(Self.bytes.count))
        let stored = try Data(contentsOf: URL(fileURLWithPath: TestServers.tusDataRoot + "/" + result.uploadURL.lastPathComponent))
        #expect(stored == Self.bytes)
    }
}
