import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `blobstream cat`, run as a process: an asset through URLSession, a range, and clear errors.
@Suite struct CatCommandTests {
    private func blobstream(_ arguments: [String]) throws -> ToolProcess.Result {
        try ToolProcess.run(ToolProcess.blobstream(), arguments)
    }

    /// A library with one text asset (text, so standard output compares as a string), of
    /// several 1 MiB asset blocks.
    private func library() throws -> (directory: String, identifier: String, text: String) {
        let directory = try TempFiles.makeDirectory(prefix: "cli-cat")
        return try TempFiles.removing(directory) {
            let text = (0..<60_000).map { "line \($0) of the asset\n" }.joined()
            let file = directory + "/notes.txt"
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
            let identifier = try DirectoryAssetStore(directory: directory + "/library").import(fileAt: file)
            return (directory, identifier, text)
        }
    }

    @Test func catWritesTheWholeAsset() throws {
        let (directory, identifier, text) = try library()
        defer { TempFiles.remove(directory) }
        let result = try blobstream(["cat", "--asset-library", directory + "/library", "asset://?id=\(identifier)"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == text)
        #expect(result.standardError.isEmpty)
    }

    @Test func catWritesARange() throws {
        let (directory, identifier, text) = try library()
        defer { TempFiles.remove(directory) }
        let url = "asset://?id=\(identifier)"
        let middle = try blobstream(["cat", "--asset-library", directory + "/library", "--range", "1048570-1048599", url])
        #expect(middle.status == 0, "\(middle.standardError)")
        #expect(middle.standardOutput == String(Array(text.utf8)[1_048_570...1_048_599].map { Character(UnicodeScalar($0)) }))
        let suffix = try blobstream(["cat", "--asset-library", directory + "/library", "--range=-5", url])
        #expect(suffix.standardOutput == String(text.suffix(5)))
    }

    @Test func catErrorsNameTheURL() throws {
        let (directory, identifier, _) = try library()
        defer { TempFiles.remove(directory) }
        let missing = try blobstream(["cat", "--asset-library", directory + "/library", "asset://?id=missing.txt"])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("asset://?id=missing.txt"), "\(missing.standardError)")
        #expect(missing.standardOutput.isEmpty)

        let pastEnd = try blobstream(["cat", "--asset-library", directory + "/library", "--range", "99999999-", "asset://?id=\(identifier)"])
        #expect(pastEnd.status == 1)
        #expect(pastEnd.standardError.contains("not satisfiable"), "\(pastEnd.standardError)")

        let unregistered = try blobstream(["cat", "nosuchscheme://x"])
        #expect(unregistered.status == 1)
        #expect(unregistered.standardError.contains("nosuchscheme://x"), "\(unregistered.standardError)")

        let usage = try blobstream(["cat"])
        #expect(usage.status == 64)
    }
    /// An invalid `--range` is a usage error, not the whole blob with success.
    @Test func catRefusesAnInvalidRange() throws {
        let (directory, identifier, _) = try library()
        defer { TempFiles.remove(directory) }
        for range in ["5-x", "5-3", "99999999999999999999-", "0-99999999999999999999", "-", "x"] {
            let result = try blobstream(["cat", "--asset-library", directory + "/library", "--range", range, "asset://?id=\(identifier)"])
            #expect(result.status == 64, "--range \(range): \(result.standardError)")
            #expect(result.standardOutput.isEmpty, "--range \(range) wrote \(result.standardOutput.utf8.count) bytes")
        }
    }

    /// A server that answers a ranged request with 200 (as one of unknown length does) sends
    /// the whole blob: `cat` reads `http:` with the package's HTTP source, which skips to the
    /// first byte asked, so exactly the range is written, never the whole blob. (Through
    /// URLSession, which `cat` used for `http:` before, this was refused instead.)
    @Test func catWritesExactlyTheRangeWhenTheServerIgnoresIt() throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "200 OK", body: Array("0123456789".utf8))
        }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/blob"
        let result = try blobstream(["cat", "--range", "2-4", url])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "234")
        let suffix = try blobstream(["cat", "--range=-3", url])
        #expect(suffix.status == 0, "\(suffix.standardError)")
        #expect(suffix.standardOutput == "789")
        // "To the end" written out as the largest offset: no overflow, the whole rest.
        let toTheEnd = try blobstream(["cat", "--range", "2-9223372036854775807", url])
        #expect(toTheEnd.status == 0, "\(toTheEnd.standardError)")
        #expect(toTheEnd.standardOutput == "23456789")
        // An empty suffix has no byte to give, as for a file.
        let empty = try blobstream(["cat", "--range=-0", url])
        #expect(empty.status == 1, "\(empty.standardError)")
        #expect(empty.standardError.contains("the range is not satisfiable (length 10)"), "\(empty.standardError)")
    }

    /// A range from the blob's end on, or any range of an empty blob, over `http:` (nginx
    /// answers 416) is not satisfiable, with status 1, as it is for a file.
    @Test(arguments: [(4095, "4095-5000"), (4095, "4095-"), (0, "0-0"), (0, "-5")])
    func catOfARangeFromTheEndFails(size: Int, range: String) throws {
        try TestServers.requireNginx()
        let path = try TempFiles.makeRandomFile(in: TestServers.wwwRoot, prefix: "cat-end", size: size)
        defer { TempFiles.remove(path) }
        let result = try blobstream(["cat", "--range", range, try TestServers.nginxURL(forFileAtPath: path).absoluteString])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("the range is not satisfiable (length \(size))"), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    /// A 206 whose `Content-Range` starts elsewhere than the requested first byte is the wrong
    /// bytes, not the range.
    @Test func catFailsOnAContentRangeAtAnotherByte() throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(
                status: "206 Partial Content", fields: ["Content-Range": "bytes 0-2/10"], body: Array("012".utf8))
        }
        defer { server.stop() }
        let result = try blobstream(["cat", "--range", "2-4", "http://127.0.0.1:\(server.port)/blob"])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    /// A 206 that starts where asked but stops short, or answers `-N` with the first bytes,
    /// is not the range: nothing is written, exit 1.
    @Test(arguments: [("0-9", "bytes 0-4/100"), ("-5", "bytes 0-4/100"), ("95-", "bytes 95-98/100")])
    func catFailsOnA206ThatIsNotTheWholeRange(range: String, contentRange: String) throws {
        let server = try ScriptedHTTPServer { _ in
            ScriptedHTTPServer.response(status: "206 Partial Content", fields: ["Content-Range": contentRange], body: Array("01234".utf8))
        }
        defer { server.stop() }
        let result = try blobstream(["cat", "--range", range, "http://127.0.0.1:\(server.port)/blob"])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    /// An `asset:` URL without `--asset-library` is a usage error in every command that takes
    /// URLs, as it is in `checksum`.
    @Test(arguments: [
        ["cat", "asset://?id=x"], ["put", "asset://?id=x", "http://127.0.0.1:1/x"],
        ["upload", "asset://?id=x", "http://127.0.0.1:1/files/"],
        ["s3", "cp", "--endpoint", "http://127.0.0.1:1", "asset://?id=x", "s3://bucket/key"],
    ])
    func anAssetURLWithoutALibraryIsAUsageError(arguments: [String]) throws {
        let result = try blobstream(arguments)
        #expect(result.status == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--asset-library"), "\(result.standardError)")
    }
}
