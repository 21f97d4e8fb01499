import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The `blobstream checksum` command, run as a process: output byte for byte like the
/// coreutils tools, errors on standard error with the right exit status.
@Suite struct ChecksumCommandTests {
    static func executable() throws -> URL {
        try ToolProcess.blobstream()
    }

    func blobstream(_ arguments: [String]) async throws -> ChecksumFixtures.ToolResult {
        try await ChecksumFixtures.runExecutable(Self.executable(), arguments)
    }

    @Test func printsExactlyWhatSha256sumPrints() async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let names = ["plain.bin", "with space.bin", "back\\slash.bin", "new\nline.bin", "empty.bin"]
        var paths: [String] = []
        for (index, name) in names.enumerated() {
            paths.append(try ChecksumFixtures.writeFile(in: directory, name: name, count: name == "empty.bin" ? 0 : 300_000 * index + 17, seed: UInt64(index)))
        }
        let ours = try await blobstream(["checksum"] + paths)
        let reference = try await ChecksumFixtures.run("sha256sum", paths, installHint: "apt-get install coreutils")
        #expect(ours.status == 0)
        #expect(ours.standardError.isEmpty, "no progress bar when standard error is not a terminal")
        #expect(ours.standardOutput == reference.standardOutput)
    }

    @Test(arguments: [("sha1", "sha1sum"), ("md5", "md5sum"), ("sha256", "sha256sum")])
    func otherAlgorithmsMatchTheirTools(algorithm: String, tool: String) async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let path = try ChecksumFixtures.writeFile(in: directory, name: "blob", count: 3_000_001, seed: 11)
        let ours = try await blobstream(["checksum", "--algorithm", algorithm, path])
        let reference = try await ChecksumFixtures.run(tool, [path], installHint: "apt-get install coreutils")
        #expect(ours.status == 0)
        #expect(ours.standardOutput == reference.standardOutput)
        // The last value wins, whichever of -a and --algorithm gave it.
        let overridden = try await blobstream(["checksum", "-a", "crc32", "--algorithm", "sha1", "-a", algorithm, path])
        #expect(overridden.standardOutput == reference.standardOutput)
    }

    @Test func crcsAndOffsets() async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let bytes = ChecksumFixtures.bytes(count: 2_500_000, seed: 12)
        let path = directory.appendingPathComponent("blob").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let crc32 = try await blobstream(["checksum", "-a", "crc32", path])
        let python = try await ChecksumFixtures.run("python3", ["-c", "import sys, zlib; print('%08x' % zlib.crc32(open(sys.argv[1], 'rb').read()))", path],
                                              installHint: "apt-get install python3")
        #expect(crc32.standardOutput == "\(ChecksumFixtures.firstWord(python.standardOutput))  \(path)\n")

        let crc32c = try await blobstream(["checksum", "--algorithm=crc32c", path])
        #expect(crc32c.standardOutput == "\(CRC32C.digest(of: bytes).hex)  \(path)\n")

        // --offset N hashes bytes N..end, as `tail -c +N+1 | sha256sum` would.
        let suffixPath = directory.appendingPathComponent("suffix").path
        try Data(bytes[1_000_000...]).write(to: URL(fileURLWithPath: suffixPath))
        let offset = try await blobstream(["checksum", "--offset", "1000000", path])
        let reference = try await ChecksumFixtures.run("sha256sum", [suffixPath], installHint: "apt-get install coreutils")
        #expect(offset.standardOutput == "\(ChecksumFixtures.firstWord(reference.standardOutput))  \(path)\n")

        let url = URL(fileURLWithPath: path).absoluteString
        let viaURL = try await blobstream(["checksum", url])
        #expect(viaURL.standardOutput == "\(SHA256.digest(of: bytes).hex)  \(url)\n")
    }

    @Test func failuresNameTheInputAndExitNonZero() async throws {
        let missing = "/nonexistent/blobstream-cli-test.bin"
        let result = try await blobstream(["checksum", missing])
        #expect(result.status == 1)
        #expect(result.standardOutput.isEmpty)
        #expect(result.standardError == "blobstream checksum: \(missing): not found\n")

        let directory = try await blobstream(["checksum", "/tmp"])
        #expect(directory.status == 1)
        #expect(directory.standardError.contains("/tmp: is a directory"))

        let unknownScheme = try await blobstream(["checksum", "nosuchscheme://host/blob"])
        #expect(unknownScheme.status == 1)
        #expect(unknownScheme.standardError.contains("nosuchscheme://host/blob"))

        let directoryURL = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directoryURL.path) }
        let path = try ChecksumFixtures.writeFile(in: directoryURL, name: "small", count: 100, seed: 1)
        let pastEnd = try await blobstream(["checksum", "--offset", "101", path])
        #expect(pastEnd.status == 1)
        #expect(pastEnd.standardError.contains(path) && pastEnd.standardError.contains("invalid offset 101"))

        // The good file is still printed; the exit status reports the bad one.
        let mixed = try await blobstream(["checksum", path, missing])
        #expect(mixed.status == 1)
        #expect(mixed.standardOutput == "\(SHA256.digest(of: ChecksumFixtures.bytes(count: 100, seed: 1)).hex)  \(path)\n")
    }

    @Test func usageErrorsAndHelp() async throws {
        let noArguments = try await blobstream([])
        #expect(noArguments.status == 64)
        #expect(noArguments.standardError.contains("usage: blobstream <command>"))

        let noPath = try await blobstream(["checksum"])
        #expect(noPath.status == 64)
        #expect(noPath.standardError.contains("missing <path-or-url>"))

        let badAlgorithm = try await blobstream(["checksum", "--algorithm", "sha3", "x"])
        #expect(badAlgorithm.status == 64)
        #expect(badAlgorithm.standardError.contains("unknown algorithm 'sha3'"))

        let badOffset = try await blobstream(["checksum", "--offset", "-5", "x"])
        #expect(badOffset.status == 64)
        #expect(try await blobstream(["checksum", "--frobnicate", "x"]).status == 64)
        #expect(try await blobstream(["frobnicate"]).status == 64)

        for arguments in [["--help"], ["help"], ["-h"]] {
            let help = try await blobstream(arguments)
            #expect(help.status == 0)
            #expect(help.standardOutput.contains("checksum"))
        }
        for arguments in [["checksum", "--help"], ["help", "checksum"], ["checksum", "x", "-h"]] {
            let help = try await blobstream(arguments)
            #expect(help.status == 0)
            #expect(help.standardOutput.contains("usage: blobstream checksum"))
            #expect(help.standardOutput.contains("--offset"))
        }
    }

    @Test func progressBarOnlyOnATerminal() async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let path = try ChecksumFixtures.writeFile(in: directory, name: "blob", count: 8 << 20, seed: 2)
        // `script` gives the command a pseudo-terminal for both output streams.
        let command = "'\(try Self.executable().path)' checksum '\(path)'"
        let terminal = try await ChecksumFixtures.run("script", ["-qec", command, "/dev/null"], installHint: "apt-get install bsdutils")
        #expect(terminal.status == 0)
        #expect(terminal.standardOutput.contains("%"), "a percentage is drawn")
        #expect(terminal.standardOutput.contains("\r\u{1B}[K"), "the bar is erased at the end")
        #expect(terminal.standardOutput.hasSuffix("\(SHA256.digest(of: ChecksumFixtures.bytes(count: 8 << 20, seed: 2)).hex)  \(path)\r\n"))
    }
}
