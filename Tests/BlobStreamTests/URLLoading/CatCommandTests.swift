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
        let text = (0..<60_000).map { "line \($0) of the asset\n" }.joined()
        let file = directory + "/notes.txt"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let identifier = try DirectoryAssetStore(directory: directory + "/library").import(fileAt: file)
        return (directory, identifier, text)
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
}
