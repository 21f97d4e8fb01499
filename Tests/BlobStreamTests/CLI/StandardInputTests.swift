import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// `blobstream` reading standard input, `/dev/stdin` and FIFOs as `sha256sum` reads them: once,
/// to the end, with no length known; and saying so where a command needs a length.
@Suite struct StandardInputTests {
    static let bytes = Data(TempFiles.pseudoRandomBytes(count: 3_000_017, seed: 41))

    func sha256sum(_ data: Data, name: String = "-") throws -> String {
        "\(try TempFiles.sha256(of: data))  \(name)\n"
    }

    @Test func checksumOfStandardInputPrintsLikeSha256sum() async throws {
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "-"], standardInput: Self.bytes)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == (try sha256sum(Self.bytes)))
        #expect(result.standardError.isEmpty)

        let empty = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "-"], standardInput: Data())
        #expect(empty.standardOutput == (try sha256sum(Data())))

        let md5 = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "-a", "md5", "-"], standardInput: Data("abc".utf8))
        #expect(md5.standardOutput == "900150983cd24fb0d6963f7d28e17f72  -\n")
    }

    @Test func checksumOfDevStdinAndAFIFO() async throws {
        let viaDevice = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "/dev/stdin"], standardInput: Self.bytes)
        #expect(viaDevice.status == 0, "\(viaDevice.standardError)")
        #expect(viaDevice.standardOutput == (try sha256sum(Self.bytes, name: "/dev/stdin")))

        let directory = try TempFiles.makeDirectory(prefix: "cli-fifo")
        defer { TempFiles.remove(directory) }
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The writer opens the FIFO only once the command is running and may be reading.
        let process = try ToolProcess.startBlobstream(["checksum", fifo, "-"], standardInput: .pipe)
        let writer = Thread {
            let handle = FileHandle(forWritingAtPath: fifo)
            try? handle?.write(contentsOf: Self.bytes.prefix(1_000_000))
            try? handle?.write(contentsOf: Self.bytes.dropFirst(1_000_000))
            try? handle?.close()
        }
        writer.start()
        process.feedThenClose(Data("stdin".utf8))
        let result = await process.finished()
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == (try sha256sum(Self.bytes, name: fifo)) + (try sha256sum(Data("stdin".utf8))))
    }

    @Test func standardInputIsReadOnceAndInOrder() async throws {
        let twice = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "-", "-"], standardInput: Data("x".utf8))
        #expect(twice.status == 64)
        #expect(twice.standardError.contains("standard input (-) can be read only once"))
    }

    /// `--offset N` on a pipe reads and drops N bytes (`tail -c +N`), over many reads; a pipe
    /// that ends first is an invalid offset naming the length it had, never a digest.
    @Test func checksumOffsetSkipsThePipesFirstBytes() async throws {
        let offset = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "--offset", "1000005", "-"], standardInput: Self.bytes)
        #expect(offset.status == 0, "\(offset.standardError)")
        #expect(offset.standardOutput == (try sha256sum(Self.bytes.dropFirst(1_000_005))))

        let tooFar = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", "--offset", "20", "-"], standardInput: Data("0123456789".utf8))
        #expect(tooFar.status == 1)
        #expect(tooFar.standardOutput.isEmpty)
        #expect(tooFar.standardError.contains("-: invalid offset 20 (length is 10)"), "\(tooFar.standardError)")

        // Standard input redirected from a regular file (`< file`) is skipped the same way.
        let directory = try TempFiles.makeDirectory(prefix: "stdin-offset")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob"
        try Data("0123456789".utf8).write(to: URL(fileURLWithPath: path))
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let child = try ToolProcess.start(ToolProcess.blobstream(), ["checksum", "--offset", "5", "-"], standardInput: .file(handle))
        let redirected = await child.finished()
        #expect(redirected.status == 0, "\(redirected.standardError)")
        #expect(redirected.standardOutput == (try sha256sum(Data("56789".utf8))))
    }

    /// A pipe's length is known only at its end: the tus upload defers it (creation-defer-length)
    /// and sends it with the last chunk.
    @Test func aTusUploadOfStandardInputDefersItsLength() async throws {
        try TestServers.requireTus()
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), 
            ["upload", "--chunk-size", "1M", "-", TestServers.tusFilesURL.absoluteString], standardInput: Self.bytes)
        #expect(result.status == 0, "\(result.standardError)")
        let lines = result.standardOutput.split(separator: "\n").map(String.init)
        let uploadURL = try #require(URL(string: lines.last ?? ""))
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(lines.first == lines.last)
        #expect(try TempFiles.sha256(ofFileAtPath: TestServers.tusDataPath(forUpload: uploadURL)) == TempFiles.sha256(of: Self.bytes))
    }

    /// A server without creation-defer-length cannot take a pipe, and the command says so,
    /// naming the server, before it reads anything.
    @Test func aTusUploadOfAPipeNeedsDeferLengthAndSaysWhy() async throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(
                status: "204 No Content",
                fields: ["Tus-Resumable": "1.0.0", "Tus-Version": "1.0.0", "Tus-Extension": "creation,termination"])
        }
        defer { server.stop() }
        let endpoint = "http://127.0.0.1:\(server.port)/files/"
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["upload", "-", endpoint], standardInput: Data("abc".utf8))
        #expect(result.status == 1)
        #expect(result.standardError.contains(endpoint), "\(result.standardError)")
        #expect(result.standardError.contains("creation-defer-length"))
        #expect(server.parsedRequests.map(\.target) == ["/files/"])
    }

    /// Interrupted, the upload of standard input says it cannot be continued, rather than
    /// offering a --resume that would send other bytes.
    @Test func anInterruptedUploadOfStandardInputOffersNoResume() throws {
        try TestServers.requireTus()
        let process = try ToolProcess.startBlobstream(["upload", "--chunk-size", "64K", "-", TestServers.tusFilesURL.absoluteString], standardInput: .pipe)
        process.write(Data(Self.bytes.prefix(200_000)))
        #expect(process.waitForStandardOutput(containing: "\n"))
        #expect(process.waitUntilHandlingSignals())
        process.send(SIGINT)
        let result = process.finish()
        let uploadURL = try #require(URL(string: result.standardOutput.split(separator: "\n").first.map(String.init) ?? ""))
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(result.status == 130, "\(result.standardError)")
        #expect(result.standardError.contains("input read once cannot continue it"), "\(result.standardError)")
        #expect(!result.standardError.contains("--resume"))
    }

    @Test func aPipeCannotContinueAnUpload() async throws {
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), 
            ["upload", "--resume", "http://127.0.0.1:1/files/a", "-", "http://127.0.0.1:1/files/"], standardInput: Data("abc".utf8))
        #expect(result.status == 64)
        #expect(result.standardError.hasPrefix("blobstream upload: standard input is read once, as it comes, so it cannot continue"))
    }

    @Test func putSendsStandardInput() async throws {
        try TestServers.requireNginx()
        let name = "cli-put-stdin-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let target = TestServers.uploadURL.appendingPathComponent(name).absoluteString
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["put", "-", target], standardInput: Self.bytes)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "201 \(target)\n")
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(of: Self.bytes))
    }
}
