import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Chunks of a file read while they are sent (``TusChunkReader/streamedBody(at:count:)``): a
/// file that changes under a chunk stops its PATCH with the file's own error and the upload
/// never completes, and a PATCH sent again starts its body from the chunk's first byte.
@Suite struct TusStreamedChunkTests {
    @Test func aFileTruncatedUnderAStreamedChunkFailsWithTheFilesErrorAndNeverCompletes() async throws {
        try TestServers.requireTus()
        let chunk = 4 << 20
        let size = 2 * chunk + 100
        let path = try makeRandomFile(size: size, seed: 131)
        defer { TempFiles.remove(path) }
        var options = TusUploadOptions()
        options.chunkSize = chunk
        let created = Locked<URL?>(nil)
        let truncated = Locked(false)
        let client = TusClient(endpoint: TestServers.tusFilesURL)

        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await client.upload(.file(path: path), options: options) { event in
                switch event {
                case .created(let url): created.withLock { $0 = url }
                case .sent(let progress) where (progress.sentBytes ?? 0) > 0:
                    // On the sending thread, inside the first chunk: the rest of it is gone.
                    truncated.withLock { done in
                        if !done { done = truncate(path, 1 << 20) == 0 }
                    }
                default: break
                }
            }
        }
        #expect(truncated.withLock { $0 })
        switch error {
        case .source(.sourceChanged(let resource, _, _))?, .source(.unexpectedEnd(let resource, _, _))?:
            #expect(resource.contains(path), "\(resource)")
        default:
            Issue.record("expected the file's own error, got \(String(describing: error))")
        }
        let upload = try #require(created.withLock { $0 })
        defer { TestServers.removeUploads([upload]) }
        let status = try await client.status(of: upload)
        #expect(status.offset < Int64(size), "the server was never sent the whole upload")
    }

    /// Chunks of 1 to 3 bytes: the read-ahead buffer then holds one piece or two of 1 byte.
    @Test(arguments: [1, 2, 3])
    func tinyChunksStreamTheWholeFile(chunkSize: Int) async throws {
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 7, seed: 132)
        defer { TempFiles.remove(path) }
        var options = TusUploadOptions()
        options.chunkSize = chunkSize
        let result = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), options: options)
        defer { TestServers.removeUploads([result.uploadURL]) }
        #expect(result.length == 7)
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    @Test func aPatchSentAgainAfterARefusalStartsItsBodyFromTheChunksFirstByte() async throws {
        let chunk = 256 << 10
        let size = 2 * chunk + 10
        // Printable bytes, so the recorded requests (text) hold them exactly.
        let bytes: [UInt8] = (0..<size).map { (index: Int) -> UInt8 in UInt8(97 + (index * 7 + index / 1000) % 26) }
        let directory = try TempFiles.makeDirectory(prefix: "streamed-chunk")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.txt"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let refused = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), refused, ScriptedTus.patched(Int64(chunk)),
            ScriptedTus.patched(Int64(2 * chunk)), ScriptedTus.patched(Int64(size)),
        ]])
        let asked = Locked(0)
        let client = TusClient(endpoint: ScriptedTus.endpoint(server), headerProvider: { _ in
            ["Authorization": "Bearer \(asked.withLock { $0 += 1; return $0 })"]
        })

        let result = try await client.upload(.file(path: path), options: ScriptedTus.options(chunkSize: chunk))

        #expect(result.length == Int64(size))
        let patches = server.parsedRequests.filter { $0.raw.hasPrefix("PATCH ") }
        try #require(patches.count == 4)
        let expected = [0..<chunk, 0..<chunk, chunk..<2 * chunk, 2 * chunk..<size]
        for (patch, range) in zip(patches, expected) {
            let body = patch.raw.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            let matches = Array(body.utf8) == Array(bytes[range])
            #expect(matches, "PATCH at \(patch.fields["upload-offset"] ?? "?"): \(body.utf8.count) bytes, not bytes \(range) of the file")
        }
        #expect(patches[0].fields["authorization"] != patches[1].fields["authorization"], "sent again with a renewed field")
    }
}
