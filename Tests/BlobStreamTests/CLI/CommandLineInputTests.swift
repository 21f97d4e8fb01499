import BlobTestSupport
import Foundation
import Testing

/// Every option that takes a number and every URL a command sends requests to, given what a
/// user might type: the command refuses with a usage error (exit 64) naming the option and the
/// value, never traps, never retries.
@Suite struct CommandLineInputTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    /// Values no byte-count option accepts: signs, fractions, hex, unknown suffixes, overflow.
    static let malformed = ["-1", "-0x10", "abc", "", "1.5", "0x10", "4Q", "1e9", " 5", "99999999999999999999999",
                            "9223372036854775807K", "16777216T", "+5"]

    @Test(arguments: malformed)
    func checksumOffsetRefusesMalformedValues(value: String) async throws {
        let result = try await blobstream(["checksum", "--offset", value, "/etc/hostname"])
        #expect(result.status == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--offset") && result.standardError.contains("'\(value)'"))
        #expect(result.standardOutput.isEmpty)
    }

    @Test(arguments: malformed + ["99999999999999", "34359738368", "1", "0", "65535", "268435457", "257M", "1G"])
    func uploadChunkSizeRefusesMalformedAndOutOfBoundValues(value: String) async throws {
        // The endpoint is never contacted: nothing listens on port 1.
        let result = try await blobstream(["upload", "--chunk-size", value, "/etc/hostname", "http://127.0.0.1:1/files/"])
        #expect(result.status == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--chunk-size") && result.standardError.contains("65536 (64 KiB)"))
        #expect(!result.standardError.contains("Fatal error"))
    }

    @Test func hugeOffsetsAreRuntimeErrorsNotTraps() async throws {
        let directory = try TempFiles.makeDirectory(prefix: "cli-offsets")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob"
        try TempFiles.writeRandomFile(atPath: path, size: 1000, seed: 3)
        for offset in ["9223372036854775807", "8388607T", "1001"] {
            let result = try await blobstream(["checksum", "--offset", offset, path])
            #expect(result.status == 1, "\(offset): \(result.standardError)")
            #expect(result.standardError.contains("invalid offset"))
        }
        // Suffixes are binary: 1K skips 1024 bytes.
        let suffixed = try await blobstream(["checksum", "--offset", "0K", path])
        #expect(suffixed.status == 0)
        let tooFar = try await blobstream(["checksum", "--offset", "1K", path])
        #expect(tooFar.standardError.contains("invalid offset 1024"))
    }

    /// `upload` and `put` share one check of the URL they send to, with one message.
    @Test(arguments: ["ftp://127.0.0.1/files/", "htp://127.0.0.1/files/", "127.0.0.1:18090/files/", "http://", "files/", "file:///tmp/x"])
    func uploadAndPutRefuseWhatIsNotAnHTTPURL(url: String) async throws {
        let upload = try await blobstream(["upload", "/etc/hostname", url])
        let put = try await blobstream(["put", "/etc/hostname", url])
        let resume = try await blobstream(["upload", "--resume", url, "/etc/hostname", "http://127.0.0.1:1/files/"])
        for result in [upload, put, resume] {
            #expect(result.status == 64, "\(url): \(result.standardError)")
            #expect(result.standardError.contains("'\(url)' is not an http:// or https:// URL"))
            #expect(!result.standardError.contains("retry"))
        }
        #expect(upload.standardError.hasPrefix("blobstream upload: "))
        #expect(put.standardError.hasPrefix("blobstream put: "))
    }
}
