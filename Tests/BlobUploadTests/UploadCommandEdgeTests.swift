import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// `blobstream upload` at the edges of what it accepts, run as a process against the real tus
/// server: the smallest chunk size and a suffixed one upload every byte; the upload is
/// terminated afterwards so the server keeps nothing.
@Suite(.serialized) struct UploadCommandEdgeTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    @Test(arguments: [("64K", 1_000_003), ("65536", 200_000), ("4M", 9_000_001), ("1MiB", 3_000_000)])
    func chunkSizesWithinTheBoundsUploadEveryByte(chunkSize: String, size: Int) async throws {
        try TestServers.requireChecksumTus()
        let path = try makeRandomFile(size: size, seed: 31)
        defer { TempFiles.remove(path) }

        let result = try await blobstream(["upload", "--chunk-size", chunkSize, path, TestServers.checksumTusFilesURL.absoluteString])

        #expect(result.status == 0, "\(result.standardError)")
        let uploadURL = try #require(URL(string: result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""))
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
        try await TusClient(endpoint: TestServers.checksumTusFilesURL).terminate(uploadURL)
    }

    @Test func chunkSizesOutsideTheBoundsCreateNothing() async throws {
        try TestServers.requireTus()
        for value in ["99999999999999", "34359738368", "1", "65535", "257M"] {
            let result = try await blobstream(["upload", "--chunk-size", value, "/etc/hostname", TestServers.tusFilesURL.absoluteString])
            #expect(result.status == 64, "\(value): \(result.standardError)")
            #expect(result.standardOutput.isEmpty, "no upload URL: nothing was created")
            #expect(!result.standardError.contains("Fatal error"))
        }
    }
}
