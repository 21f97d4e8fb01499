import BlobStream
import Foundation
import Testing

/// What ``PositionedInputStream`` promises to code that takes any `InputStream`: a seek that
/// says why it was refused, and answers that a wrapping ``HashingInputStream`` passes on.
@Suite struct PositionedInputStreamTests {
    static let bytes = Data((0..<100).map { UInt8($0) })

    @Test func aSeekPastTheKnownEndSaysWhereAndHowLong() throws {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes, name: "mem:blob"))
        stream.open()
        defer { stream.close() }
        let positioned: any PositionedInputStream = stream
        #expect(throws: BlobStreamError.invalidOffset(resource: "mem:blob", offset: 101, length: 100)) {
            try positioned.seek(to: 101)
        }
        #expect(throws: BlobStreamError.invalidOffset(resource: "mem:blob", offset: -1, length: 100)) {
            try positioned.seek(to: -1)
        }
        try positioned.seek(to: 60)
        #expect(positioned.offset == 60)
        #expect(positioned.remainingLength == 40)
        #expect(positioned.resourceName == "mem:blob")
        #expect(positioned.closesFromAnyThread)
    }

    @Test func aClosedStreamRefusesToMove() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        stream.open()
        stream.close()
        #expect(throws: BlobStreamError.closed) { try stream.seek(to: 1) }
    }

    @Test func aSeekBeforeTheOpenIsWhereTheFirstReadStarts() throws {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        try stream.seek(to: 98)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(stream.read(&buffer, maxLength: 10) == 2)
        #expect(Array(buffer[0..<2]) == [98, 99])
    }

    @Test func aHashingStreamPassesOnItsBaseAndRefusesToMoveOnceItHashed() throws {
        let base = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes, name: "mem:hashed"))
        let hashing = HashingInputStream(base)
        try hashing.seek(to: 10)
        hashing.open()
        defer { hashing.close() }
        #expect(hashing.resourceName == "mem:hashed")
        #expect(hashing.length == 100)
        #expect(hashing.offset == 10)
        #expect(hashing.closesFromAnyThread)
        var buffer = [UInt8](repeating: 0, count: 5)
        #expect(hashing.read(&buffer, maxLength: 5) == 5)
        #expect(hashing.offset == 15)
        #expect(throws: BlobStreamError.self) { try hashing.seek(to: 0) }
        #expect(base.offset == 15, "a refused seek leaves the base where it was")
    }

    @Test func aHashingStreamOverAPlainStreamCannotMoveAndCountsWhatItPassedOn() throws {
        let hashing = HashingInputStream(InputStream(data: Self.bytes))
        #expect(throws: BlobStreamError.self) { try hashing.seek(to: 3) }
        hashing.open()
        defer { hashing.close() }
        var buffer = [UInt8](repeating: 0, count: 7)
        #expect(hashing.read(&buffer, maxLength: 7) == 7)
        #expect(hashing.offset == 7)
        #expect(hashing.length == nil)
        #expect(!hashing.closesFromAnyThread)
        #expect(hashing.resourceName == "input stream")
    }
}
