import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `blobstream asset import`, and `checksum` of asset and HTTP URLs, run as processes.
@Suite struct AssetCommandTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    @Test func importThenChecksumTheAssetURL() async throws {
        let directory = try TempFiles.makeDirectory(prefix: "cli-asset")
        defer { TempFiles.remove(directory) }
        let file = directory + "/photo.jpg"
        try TempFiles.writeRandomFile(atPath: file, size: 3_000_001, seed: 11)
        let library = directory + "/library"

        let imported = try await blobstream(["asset", "import", "--asset-library", library, file])
        #expect(imported.status == 0)
        let identifier = try #require(imported.standardOutput.split(separator: "\n").last.map(String.init))

        let url = "asset://?id=\(identifier)"
        let checksum = try await blobstream(["checksum", "--asset-library", library, url])
        #expect(checksum.status == 0, "\(checksum.standardError)")
        #expect(checksum.standardOutput == "\(try TempFiles.sha256(ofFileAtPath: file))  \(url)\n")
    }

    @Test func assetErrorsAreClear() async throws {
        let directory = try TempFiles.makeDirectory(prefix: "cli-asset-errors")
        defer { TempFiles.remove(directory) }
        let library = directory + "/library"

        let withoutLibrary = try await blobstream(["checksum", "asset://?id=abc"])
        #expect(withoutLibrary.status == 64)
        #expect(withoutLibrary.standardError.contains("--asset-library"))

        let traversal = try await blobstream(["checksum", "--asset-library", library, "asset://?id=../etc"])
        #expect(traversal.status == 1)
        #expect(traversal.standardError.contains("asset://?id=../etc"))

        let missing = try await blobstream(["asset", "import", "--asset-library", library, directory + "/nothing"])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains(directory + "/nothing"))

        let usage = try await blobstream(["asset", "import", directory + "/nothing"])
        #expect(usage.status == 64)

        // `-` is standard input everywhere else: refused as such, not "open failed" for a file.
        let standardInput = try await blobstream(["asset", "import", "--asset-library", library, "-"])
        #expect(standardInput.status == 64)
        #expect(standardInput.standardError.contains("not standard input"), "\(standardInput.standardError)")
    }

    @Test func checksumOfAnHTTPURL() async throws {
        try TestServers.requireNginx()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "cli-http")
        defer { TempFiles.remove(directory) }
        let file = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: file, size: 2_500_000, seed: 5)
        let url = try TestServers.nginxURL(forFileAtPath: file).absoluteString

        let result = try await blobstream(["checksum", url])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "\(try TempFiles.sha256(ofFileAtPath: file))  \(url)\n")

        let offset = try await blobstream(["checksum", "--offset", "1000000", url])
        let expected = try TempFiles.sha256(of: TempFiles.pseudoRandomBytes(count: 1_500_000, seed: 5, from: 1_000_000))
        #expect(offset.standardOutput == "\(expected)  \(url)\n")

        let missing = try await blobstream(["checksum", url + ".missing"])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("404"))
    }
}
