@testable import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A file rewritten in place while it is read must end in `sourceChanged`, never in a success
/// made of two versions: `confirmUnchanged(at:)` compares the descriptor's status with the one
/// of the open, and long reads compare it once per ``FileDataSource/versionCheckInterval``.
@Suite struct FileChangeDetectionTests {
    static func file(size: Int, seed: UInt64) throws -> (directory: String, path: String) {
        let directory = try TempFiles.makeDirectory(prefix: "file-change")
        let path = directory + "/blob"
        try TempFiles.removing(directory) { try TempFiles.writeRandomFile(atPath: path, size: size, seed: seed) }
        return (directory, path)
    }

    static func changedReason(_ error: BlobStreamError?, path: String, offset: Int64) -> String? {
        guard case .sourceChanged(path, offset, let reason) = error else { return nil }
        return reason
    }

    @Test func anUnchangedFileIsConfirmed() throws {
        let (directory, path) = try Self.file(size: 300_000, seed: 1)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        #expect(try FileMutation.read(source, count: 300_000, at: 0).get() == TempFiles.pseudoRandomBytes(count: 300_000, seed: 1))
        #expect(source.confirmUnchanged(at: 300_000) == nil)
        source.close()
    }

    @Test func aFileRewrittenInPlaceAfterTheLastReadIsReportedChanged() throws {
        let (directory, path) = try Self.file(size: 300_000, seed: 1)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 300_000, at: 0).get()
        try FileMutation.rewriteInPlace(path, with: TempFiles.pseudoRandomBytes(count: 300_000, seed: 2))
        try FileMutation.moveModificationTimeForward(path)

        let reason = Self.changedReason(source.confirmUnchanged(at: 300_000), path: path, offset: 300_000)
        #expect(reason?.contains("modification time") == true, "\(String(describing: reason))")
        source.close()
    }

    @Test func aRewriteThatPutsTheModificationTimeBackIsStillCaught() throws {
        let (directory, path) = try Self.file(size: 200_000, seed: 3)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        let opened = try FileMutation.status(path)
        try FileMutation.rewriteRestoringModificationTime(path, with: TempFiles.pseudoRandomBytes(count: 200_000, seed: 4), opened: opened)

        let reason = Self.changedReason(source.confirmUnchanged(at: 200_000), path: path, offset: 200_000)
        #expect(reason?.contains("change time") == true, "\(String(describing: reason))")
        source.close()
    }

    @Test func aFileThatGrewIsReportedChanged() throws {
        let (directory, path) = try Self.file(size: 100_000, seed: 5)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 100_000, at: 0).get()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()

        let reason = Self.changedReason(source.confirmUnchanged(at: 100_000), path: path, offset: 100_000)
        #expect(reason?.contains("size changed from 100000 to 100003 bytes") == true, "\(String(describing: reason))")
        source.close()
    }

    /// The read that reaches the end compares too, so the last bytes of a file rewritten
    /// before them are never delivered, whatever the stream does afterwards.
    @Test func theReadThatReachesTheEndFailsForAFileRewrittenMeanwhile() throws {
        let (directory, path) = try Self.file(size: 300_000, seed: 12)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 100_000, at: 0).get()
        try FileMutation.rewriteInPlace(path, with: TempFiles.pseudoRandomBytes(count: 300_000, seed: 13))
        try FileMutation.moveModificationTimeForward(path)
        let failure = FileMutation.read(source, count: 200_000, at: 100_000).failure
        #expect(Self.changedReason(failure, path: path, offset: 100_000) != nil, "\(String(describing: failure))")
        source.close()
    }

    /// A long read fails at the next check instead of reading on to the end: one `fstat` per
    /// interval, not per read.
    @Test func aLongReadFailsAtTheNextPeriodicCheck() throws {
        let interval = Int(FileDataSource.versionCheckInterval)
        let size = 3 * interval
        let (directory, path) = try Self.file(size: size, seed: 6)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        _ = try FileMutation.read(source, count: 65_536, at: 0).get()
        try FileMutation.rewriteInPlace(path, with: TempFiles.pseudoRandomBytes(count: 65_536, seed: 7))
        try FileMutation.moveModificationTimeForward(path)

        var offset: Int64 = 65_536
        var failure: BlobStreamError?
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        reading: while offset < Int64(size) {
            switch source.read(into: buffer, at: offset, whenReadable: {}) {
            case .read(let count): offset += Int64(count)
            case .failed(let error): failure = error; break reading
            case let other: Issue.record("unexpected \(other)"); break reading
            }
        }
        guard case .sourceChanged(path, let at, _) = failure else {
            Issue.record("a read went on past the check: \(String(describing: failure))")
            return
        }
        #expect(at <= Int64(interval), "the first check comes after \(interval) bytes at most")
        source.close()
    }

    /// The descriptor keeps the opened inode alive, so a file replaced by a rename is read to
    /// the end of the version that was opened: one whole version, nothing to report.
    @Test func aFileReplacedByRenameIsReadWholeFromTheOpenedVersion() throws {
        let (directory, path) = try Self.file(size: 200_000, seed: 8)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        _ = try FileMutation.openSource(source).get()
        let head = try FileMutation.read(source, count: 50_000, at: 0).get()
        try TempFiles.writeRandomFile(atPath: directory + "/new", size: 200_000, seed: 9)
        #expect(rename(directory + "/new", path) == 0)
        let tail = try FileMutation.read(source, count: 150_000, at: 50_000).get()
        #expect(head + tail == TempFiles.pseudoRandomBytes(count: 200_000, seed: 8))
        #expect(source.confirmUnchanged(at: 200_000) == nil)
        source.close()
    }

    /// The version names everything `confirmUnchanged` compares, so a reopen after an
    /// in-place rewrite that kept the modification time is refused too.
    @Test func theVersionIncludesTheChangeTime() throws {
        let (directory, path) = try Self.file(size: 10_000, seed: 10)
        defer { TempFiles.remove(directory) }
        let source = FileDataSource(path: path)
        let first = try FileMutation.openSource(source).get()
        source.close()
        let opened = try FileMutation.status(path)
        try FileMutation.rewriteRestoringModificationTime(path, with: TempFiles.pseudoRandomBytes(count: 10_000, seed: 11), opened: opened)
        let second = try FileMutation.openSource(source).get()
        source.close()
        #expect(first.version != nil)
        #expect(first.length == second.length)
        #expect(first.version != second.version)
    }
}
