import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// Over the package's own client, a body that yields another length than the caller expected is
/// never completed: the last chunk does not go out, so the server stores nothing, and the
/// upload fails naming the offset where the body ended.
@Suite struct StreamedPutLengthTests {
    @Test(arguments: [100, 300])
    func aBodyOfAnotherLengthIsNotCompleted(actual: Int) async throws {
        try TestServers.requireNginx()
        let name = "length-\(UUID().uuidString).bin"
        let target = TestServers.uploadURL.appendingPathComponent(name)
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        await #expect {
            _ = try await StreamedUploader(transport: .automatic).upload(
                InputStream(data: Data(repeating: 5, count: actual)), to: target, expectedLength: 200)
        } throws: { error in
            guard case .source(.unexpectedEnd(_, let offset, 200))? = error as? BlobUploadError else { return false }
            return offset == Int64(actual)
        }
        #expect(!FileManager.default.fileExists(atPath: stored))
    }
}
