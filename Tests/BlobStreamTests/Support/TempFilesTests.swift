@testable import BlobTestSupport
import Foundation
import Testing

/// The deterministic content generator and the digests that other tests compare against.
@Suite struct TempFilesTests {
    @Test func anyRangeOfTheStreamCanBeProducedOnItsOwn() {
        let whole = TempFiles.pseudoRandomBytes(count: 1000, seed: 42)
        for (offset, count) in [(0, 0), (0, 1), (3, 5), (7, 9), (8, 8), (123, 877), (999, 1)] {
            #expect(TempFiles.pseudoRandomBytes(count: count, seed: 42, from: offset) == Array(whole[offset..<offset + count]))
        }
        #expect(TempFiles.pseudoRandomBytes(count: 1000, seed: 43) != whole)
        #expect(Set(whole).count > 200, "the bytes must not be a short repeating pattern")
    }

    @Test func writtenFilesHoldTheStreamAndHashLikeTheirBytes() throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        let size = 3 * 1024 * 1024 + 5

        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 7)

        let contents = try #require(FileManager.default.contents(atPath: path))
        #expect(contents.count == size)
        #expect(Array(contents) == TempFiles.pseudoRandomBytes(count: size, seed: 7))
        #expect(try TempFiles.sha256(ofFileAtPath: path) == TempFiles.sha256(of: contents))
        TempFiles.remove(directory)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test func sha256MatchesTheStandardTestVector() throws {
        #expect(try TempFiles.sha256(of: Array("abc".utf8))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(throws: TestSupportError.self) { try TempFiles.sha256(ofFileAtPath: "/nonexistent/blob") }
    }
}
