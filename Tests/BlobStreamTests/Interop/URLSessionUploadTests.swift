import BlobStream
import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// BlobInputStream as URLSession's body stream, against nginx on 127.0.0.1.
@Suite(.serialized) struct URLSessionUploadTests {
    /// PUTs `stream` to nginx under `name` and returns the HTTP status.
    static func put(_ stream: InputStream, name: String) async throws -> Int {
        var request = URLRequest(url: TestServers.uploadURL.appendingPathComponent(name))
        request.httpMethod = "PUT"
        request.httpBodyStream = stream
        request.timeoutInterval = 120
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? -1
    }

    @Test func a256MiBFileArrivesByteIdentical() async throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(prefix: "urlsession-put")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 256 << 20, seed: 42)
        let name = "urlsession-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }

        let status = try await Self.put(BlobInputStream(fileAtPath: path), name: name)

        #expect(status == 201 || status == 204)
        #expect(try TempFiles.sha256(ofFileAtPath: TestServers.uploadRoot + "/" + name) == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func anUploadFromAnOffsetSendsTheRest() async throws {
        try TestServers.requireNginx()
        let bytes = TempFiles.pseudoRandomBytes(count: 3_000_000, seed: 7)
        let name = "urlsession-offset-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)))
        #expect(stream.setProperty(NSNumber(value: 1_000_001), forKey: .fileCurrentOffsetKey))

        let status = try await Self.put(stream, name: name)

        #expect(status == 201 || status == 204)
        let stored = try Data(contentsOf: URL(fileURLWithPath: TestServers.uploadRoot + "/" + name))
        #expect(stored == Data(bytes[1_000_001...]))
    }

    @Test func aFailingSourceFailsTheUploadInsteadOfSendingAShortBody() async throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(prefix: "urlsession-short")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 8 << 20, seed: 3)
        let name = "urlsession-short-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        // The source goes stale at 4 MiB and reopens as a different, shorter blob.
        let source = ScriptedDataSource(bytes: TempFiles.pseudoRandomBytes(count: 8 << 20, seed: 3), staleOffsets: [4 << 20])
        let stream = BlobInputStream(dataSource: source)
        stream.maxConsecutiveReopens = 0

        await #expect(throws: (any Error).self) {
            _ = try await Self.put(stream, name: name)
        }
        #expect(stream.streamStatus == .error)
        // nginx keeps nothing of a body that did not end properly.
        #expect(!FileManager.default.fileExists(atPath: TestServers.uploadRoot + "/" + name))
    }

    @Test(arguments: [false, true])
    func aSourceThatCannotConfirmItsVersionAtTheEndFailsTheUpload(hidesLength: Bool) async throws {
        try TestServers.requireNginx()
        let bytes = TempFiles.pseudoRandomBytes(count: 3_000_000, seed: 11)
        let name = "urlsession-changed-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        // Every byte is read and sent; only the check before the end says the blob changed.
        let source = ProbeDataSource(bytes: bytes, hidesLength: hidesLength)
        let changed = BlobStreamError.sourceChanged(resource: "probe", offset: 3_000_000, reason: "rewritten in place")
        source.answerConfirm(with: changed)
        let stream = BlobInputStream(dataSource: source)

        await #expect(throws: (any Error).self) {
            _ = try await Self.put(stream, name: name)
        }
        #expect(stream.blobError == changed)
        #expect(source.confirmCount == 1)
        #expect(!FileManager.default.fileExists(atPath: TestServers.uploadRoot + "/" + name))
    }
}
