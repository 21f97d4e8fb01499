import BlobTestSupport
import Foundation
import Testing

/// `blobstream upload` warns when the upload was created only on a later attempt: an earlier
/// creation that reached the server may have left an upload nothing will finish.
@Suite struct UploadCreatedAgainTests {
    @Test func aCreationSentAgainIsAWarning() async throws {
        let options = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\nTus-Extension: creation\r\n\r\n"
        let created = "HTTP/1.1 201 Created\r\nTus-Resumable: 1.0.0\r\nLocation: /files/2\r\nContent-Length: 0\r\n\r\n"
        let patched = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 1000\r\n\r\n"
        // The first connection reads the creation POST and closes without an answer.
        let server = try ScriptedHTTPServer(connections: [[options, ""], [created, patched]])
        defer { server.stop() }
        let path = try TempFiles.makeRandomFile(prefix: "created-again", size: 1000, seed: 7)
        defer { TempFiles.remove(path) }
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["upload", path, "http://127.0.0.1:\(server.port)/files/"])
        #expect(result.status == 0, "\(result.standardError)")
        // Printed when created, and again when done.
        #expect(result.standardOutput.split(separator: "\n").allSatisfy { $0 == "http://127.0.0.1:\(server.port)/files/2" }, "\(result.standardOutput)")
        #expect(result.standardError.contains("warning: the upload was created on attempt 2: an earlier attempt failed after it may have reached the server"),
                "\(result.standardError)")
        #expect(result.standardError.contains("this upload is http://127.0.0.1:\(server.port)/files/2"), "\(result.standardError)")
    }
}
