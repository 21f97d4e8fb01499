import BlobStream
@testable import BlobUpload
import Foundation
import Testing

@Suite struct TusUploadTests {
    @Test func uploadsAFileByteIdentical() async throws {
        let path = try makeTempFile(size: 10 * 1024 * 1024 + 123)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let client = TusClient(endpoint: Peers.tus)
        var options = TusUploadOptions()
        options.chunkSize = 1024 * 1024
        let log = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        #expect(result.length == 10 * 1024 * 1024 + 123)
        #expect(result.startOffset == 0)
        guard case .created(let url) = log.all.first else {
            Issue.record("the first event is not .created: \(log.all.prefix(1))")
            return
        }
        #expect(url == result.uploadURL)
        #expect(try sameContents(path, tusStoredFile(result.uploadURL)))
        let status = try await client.status(of: result.uploadURL)
        #expect(status.offset == result.length)
        #expect(status.metadata["filename"] == (path as NSString).lastPathComponent)
    }
}
