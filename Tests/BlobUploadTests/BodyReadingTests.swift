import BlobStream
@testable import BlobUpload
import Foundation
import Testing

/// How an upload reads a plain `InputStream` into a body: a stream that keeps no status (it
/// stays `.notOpen`, as ``UntrackedStatusStream`` does) is read to its read of 0, and one that
/// ends before its declared length names the offset where it did.
@Suite struct BodyReadingTests {
    private func fill(_ stream: InputStream, count: Int, length: Int64) throws(BlobUploadError) -> [UInt8] {
        // BodyReading reads the stream it is given; the source only names it in errors.
        let source = UploadSource.streams(name: "untracked", length: length) { InputStream(data: Data()) }
        let room = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
        defer { room.deallocate() }
        let filled = try BodyReading.fill(
            room, from: stream, at: 0, source: source, expectedLength: length, endIsData: false, isCancelled: { false })
        return Array(UnsafeRawBufferPointer(rebasing: room[0..<filled]))
    }

    @Test func aStreamThatKeepsNoStatusFillsTheBody() throws {
        let bytes = try fill(UntrackedStatusStream(bytes: 3000), count: 3000, length: 3000)
        #expect(bytes == [UInt8](repeating: 9, count: 3000))
    }

    @Test func aStreamThatKeepsNoStatusAndEndsShortNamesTheOffset() {
        #expect(throws: BlobUploadError.source(.unexpectedEnd(resource: "untracked", offset: 3000, expectedLength: 4000))) {
            try fill(UntrackedStatusStream(bytes: 3000), count: 4000, length: 4000)
        }
    }
}
