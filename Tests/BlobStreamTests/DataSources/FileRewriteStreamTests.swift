import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// End to end: a stream (and a checksum) of a file rewritten in place after its last byte was
/// read from the file, but before the end was reported, fails with `sourceChanged`. This relies
/// on the stream calling ``BlobDataSource/confirmUnchanged(at:)`` before it reports the end.
@Suite struct FileRewriteStreamTests {
    /// A file source that rewrites its file in place (and moves the modification time forward)
    /// right after the read that returned the last byte: the latest moment a rewrite can come.
    final class RewritingFileSource: BlobDataSource {
        let file: FileDataSource
        let size: Int64
        let replacement: [UInt8]
        private let rewritten = Locked(false)

        init(path: String, size: Int, replacement: [UInt8]) {
            self.file = FileDataSource(path: path)
            self.size = Int64(size)
            self.replacement = replacement
        }

        var resourceName: String { file.resourceName }
        var preferredBlockSize: Int { file.preferredBlockSize }
        var didRewrite: Bool { rewritten.value }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            file.open(completion: completion)
        }

        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
            let result = file.read(into: buffer, at: offset, whenReadable: whenReadable)
            if case .read(let count) = result, offset + Int64(count) == size, !rewritten.value {
                rewritten.value = true
                try! FileMutation.rewriteInPlace(file.path, with: replacement)
                try! FileMutation.moveModificationTimeForward(file.path)
            }
            return result
        }

        func close() { file.close() }

        func confirmUnchanged(at offset: Int64) -> BlobStreamError? { file.confirmUnchanged(at: offset) }
    }

    static let size = 1_000_000

    static func source(in directory: String) throws -> RewritingFileSource {
        let path = directory + "/blob"
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 21)
        return RewritingFileSource(path: path, size: size, replacement: TempFiles.pseudoRandomBytes(count: size, seed: 22))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aStreamDoesNotReportTheEndOfAFileRewrittenMeanwhile(mode: BlobInputStream.Mode) throws {
        let directory = try TempFiles.makeDirectory(prefix: "rewrite-stream")
        defer { TempFiles.remove(directory) }
        let source = try Self.source(in: directory)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var result = 0
        var total = 0
        for _ in 0..<1_000 {
            result = stream.read(&buffer, maxLength: buffer.count)
            if result > 0 { total += result; continue }
            if result < 0, stream.blobError == .wouldBlock(offset: Int64(total)) { usleep(1_000); continue }
            break
        }
        #expect(source.didRewrite)
        #expect(result == -1, "the end of a file rewritten meanwhile was reported (\(total) bytes)")
        guard case .sourceChanged(source.resourceName, _, _) = stream.blobError else {
            Issue.record("expected sourceChanged, got \(String(describing: stream.blobError))")
            return
        }
    }

    @Test func aChecksumOfAFileRewrittenMeanwhileFails() throws {
        let directory = try TempFiles.makeDirectory(prefix: "rewrite-checksum")
        defer { TempFiles.remove(directory) }
        let source = try Self.source(in: directory)
        let stream = BlobInputStream(dataSource: source)
        #expect {
            try ChecksumCalculator(algorithm: .sha256).digest(of: stream)
        } throws: { error in
            guard case .sourceChanged(source.resourceName, _, _) = error as? BlobStreamError else { return false }
            return true
        }
        #expect(source.didRewrite)
    }
}
