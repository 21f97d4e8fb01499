import BlobStream
import BlobTestSupport
import Foundation
import Testing

@Suite struct FileDataSourceTests {
    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = try ScratchSpace.directory() + "/blobstream-file-\(UUID().uuidString)"
        try TempFiles.removing(path) { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
        return path
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func readsAWholeFile(mode: BlobInputStream.Mode) throws {
        let bytes = (0..<1_234_567).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let path = try Self.temporaryFile(bytes)
        defer { TempFiles.remove(path) }
        #expect(try StreamHarness.readAll(BlobInputStream(fileAtPath: path, mode: mode), chunk: 65_536) == bytes)
        #expect(try StreamHarness.readAll(BlobInputStream(url: URL(fileURLWithPath: path), mode: mode)!, chunk: 1000) == bytes)
    }

    @Test func missingFileNamesThePath() {
        let stream = BlobInputStream(fileAtPath: "/nonexistent/blob")
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .notFound(resource: "/nonexistent/blob"))
        #expect(stream.streamError?.localizedDescription == "/nonexistent/blob: not found")
    }

    @Test func directoryIsRefused() {
        let stream = BlobInputStream(fileAtPath: NSTemporaryDirectory())
        stream.open()
        #expect(stream.blobError == .isDirectory(path: NSTemporaryDirectory()))
    }

    @Test func emptyFileOpensAndEnds() throws {
        let path = try Self.temporaryFile([])
        defer { TempFiles.remove(path) }
        let stream = BlobInputStream(fileAtPath: path)
        stream.open()
        #expect(stream.streamStatus == .atEnd)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0)
        #expect(stream.streamError == nil)
    }

    @Test func aFileThatShrinksIsAnErrorNotAnEarlyEnd() throws {
        let path = try Self.temporaryFile(Array(repeating: 7, count: 1 << 20))
        defer { TempFiles.remove(path) }
        let stream = BlobInputStream(fileAtPath: path)
        stream.blockSize = 65_536
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        #expect(stream.read(&buffer, maxLength: buffer.count) == 65_536)
        #expect(truncate(path, 100_000) == 0)
        var result = 0
        repeat { result = stream.read(&buffer, maxLength: buffer.count) } while result > 0
        #expect(result == -1)
        #expect(stream.blobError == .unexpectedEnd(resource: path, offset: 100_000, expectedLength: 1 << 20))
    }

    @Test func unknownSchemeAndMalformedURLs() {
        #expect(BlobInputStream(url: URL(string: "gopher://example/blob")!) == nil)
        #expect(throws: BlobStreamError.self) { try BlobInputStream.make(url: URL(string: "gopher://example/blob")!) }
        do {
            _ = try BlobInputStream.make(url: URL(string: "nothing-here")!)
            Issue.record("a URL without a scheme was accepted")
        } catch {
            #expect(error.description.contains("no scheme"))
        }
    }
}
