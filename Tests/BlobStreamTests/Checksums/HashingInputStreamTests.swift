@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The decorator that hashes bytes on their way to another consumer.
@Suite struct HashingInputStreamTests {
    static let blob = ChecksumFixtures.bytes(count: 1 << 20 + 4321, seed: 77)

    /// Reads `stream` to its end in pieces of varying size, as a consumer such as URLSession does.
    func readAll(_ stream: InputStream) -> [UInt8] {
        var generator = SeededGenerator(seed: 5)
        var buffer = [UInt8](repeating: 0, count: 70_000)
        var output: [UInt8] = []
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: Int.random(in: 1...buffer.count, using: &generator))
            if count <= 0 { break }
            output += buffer[..<count]
        }
        return output
    }

    @Test func passesBytesThroughAndHashesThem() throws {
        let stream = HashingInputStream(BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob))), algorithm: .sha256)
        stream.open()
        #expect(readAll(stream) == Self.blob)
        #expect(stream.bytesHashed == Int64(Self.blob.count))
        #expect(try stream.digest() == SHA256.digest(of: Self.blob))
        stream.close()
        #expect(stream.streamStatus == .closed)
    }

    @Test func wrapsFoundationStreamsToo() throws {
        let stream = HashingInputStream(InputStream(data: Data(Self.blob)), algorithm: .crc32)
        stream.open()
        #expect(readAll(stream) == Self.blob)
        #expect(stream.streamError == nil)
        #expect(try stream.digest() == CRC32.digest(of: Self.blob))
    }

    @Test func refusesADigestOfPartOfTheStream() throws {
        let stream = HashingInputStream(InputStream(data: Data(Self.blob)), algorithm: .sha1)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(stream.partialDigest == SHA1.digest(of: Self.blob[..<1000]))
        #expect {
            try stream.digest()
        } throws: { error in
            guard case BlobStreamError.sourceFailed(_, let reason) = error else { return false }
            return reason.contains("1000 bytes hashed")
        }
    }

    @Test func aConsumerThatStopsAtTheKnownLengthGetsTheDigest() throws {
        // URLSession sends exactly Content-Length bytes and may never read the final 0.
        let stream = HashingInputStream(BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob))), algorithm: .md5)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: Self.blob.count)
        var total = 0
        while total < Self.blob.count {
            let count = buffer.withUnsafeMutableBufferPointer { stream.read($0.baseAddress!, maxLength: Self.blob.count - total) }
            #expect(count > 0)
            total += count
        }
        #expect(try stream.digest() == MD5.digest(of: Self.blob))
    }

    @Test func continuesAGivenChecksumAndForwardsTheStartOffset() throws {
        var checksum = SHA256()
        checksum.update(Self.blob[..<5000])
        let stream = HashingInputStream(BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob))), checksum: checksum)
        #expect(stream.setProperty(NSNumber(value: 5000), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 5000)
        #expect(readAll(stream) == Array(Self.blob[5000...]))
        #expect(try stream.digest() == SHA256.digest(of: Self.blob))
        // Seeking would make the digest cover two ranges.
        #expect(!stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey))
    }

    @Test func reportsTheBasesTypedError() {
        let stream = HashingInputStream(BlobInputStream(fileAtPath: "/nonexistent/hashing"))
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.streamError as? BlobStreamError == .notFound(resource: "/nonexistent/hashing"))
        #expect(throws: BlobStreamError.notFound(resource: "/nonexistent/hashing")) { try stream.digest() }

        let foundation = HashingInputStream(InputStream(fileAtPath: "/nonexistent/hashing")!)
        foundation.open()
        #expect(foundation.blobError == .notFound(resource: "input stream"))
    }

    /// Consumers close the base once done (a calculator, an upload): the digest is still that
    /// of a stream read to its end, though the closed base of unknown length no longer says so,
    /// and a base that failed still throws its own error, not "not read to its end".
    @Test func theOutcomeOutlivesTheBasesClose() throws {
        let pipeLike = ProbeDataSource(bytes: Array(Self.blob.prefix(1000)), hidesLength: true, preferredBlockSize: 100)
        let read = HashingInputStream(BlobInputStream(dataSource: pipeLike), algorithm: .sha256)
        read.open()
        #expect(readAll(read) == Array(Self.blob.prefix(1000)))
        var byte: UInt8 = 0
        #expect(read.read(&byte, maxLength: 1) == 0)
        read.close()
        #expect(try read.digest() == SHA256.digest(of: Self.blob.prefix(1000)))

        let failing = ProbeDataSource(bytes: Array(Self.blob.prefix(1000)), hidesLength: true, preferredBlockSize: 100)
        let changed = BlobStreamError.sourceChanged(resource: "probe", offset: 500, reason: "rewritten")
        failing.onRead { offset, _ in offset >= 500 ? .answer(.failed(changed)) : .serve }
        let failed = HashingInputStream(BlobInputStream(dataSource: failing), algorithm: .sha256)
        failed.open()
        _ = readAll(failed)
        failed.close()
        #expect(throws: changed) { try failed.digest() }
    }

    @Test func forwardsEventsWithItselfAsTheSender() throws {
        let base = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob)), mode: .asynchronous)
        let stream = HashingInputStream(base, algorithm: .sha1)
        let reader = SenderCheckingReader(stream: stream)
        stream.delegate = reader
        base.delegateQueue = DispatchQueue(label: "hashing-events")
        stream.open()
        #expect(reader.done.wait(timeout: .now() + 30) == .success)
        #expect(reader.senders.value.allSatisfy { $0 })
        #expect(reader.bytes.value == Self.blob)
        #expect(try stream.digest() == SHA1.digest(of: Self.blob))
    }

    @Test func aCalculatorCanReadThroughIt() async throws {
        // One read of the source serves two digests: the decorator's and the calculator's.
        let source = ScriptedDataSource(bytes: Self.blob)
        source.wouldBlockDelay = 0.0005
        let stream = HashingInputStream(BlobInputStream(dataSource: source, mode: .asynchronous), algorithm: .md5)
        let sha = try await ChecksumCalculator(algorithm: .sha256).digest(of: stream)
        #expect(sha == SHA256.digest(of: Self.blob))
        #expect(try stream.digest() == MD5.digest(of: Self.blob))
    }
}

/// Reads an asynchronous stream from its events and checks who sends them.
private final class SenderCheckingReader: NSObject, StreamDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    let senders = Locked<[Bool]>([])
    let bytes = Locked<[UInt8]>([])
    private weak var expectedSender: InputStream?

    init(stream: InputStream) {
        expectedSender = stream
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        senders.mutate { $0.append(aStream === expectedSender) }
        guard let input = aStream as? InputStream else { return }
        switch eventCode {
        case .hasBytesAvailable:
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while input.hasBytesAvailable {
                let count = input.read(&buffer, maxLength: buffer.count)
                if count <= 0 { break }
                bytes.mutate { $0 += buffer[..<count] }
            }
        case .endEncountered, .errorOccurred:
            done.signal()
        default:
            break
        }
    }
}
