@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The synchronous path: the caller's thread reads the stream to its end.
@Suite struct ChecksumCalculatorTests {
    static let blob = ChecksumFixtures.bytes(count: 3 << 20 + 12_345, seed: 42)

    @Test(arguments: ChecksumAlgorithm.allCases)
    func foundationDataStream(algorithm: ChecksumAlgorithm) throws {
        let digest = try ChecksumCalculator(algorithm: algorithm, bufferSize: 100_000)
            .digest(of: InputStream(data: Data(Self.blob)))
        var expected = algorithm.makeChecksum()
        expected.update(Self.blob)
        #expect(digest == expected.finalize())
    }

    @Test func emptyStreamsHashZeroBytes() throws {
        // Foundation's empty data stream stays `.open` until a read returns 0.
        #expect(try ChecksumCalculator().digest(of: InputStream(data: Data())) == SHA256.digest(of: [UInt8]()))
        let blob = BlobInputStream(dataSource: MemoryDataSource(data: Data()))
        #expect(try ChecksumCalculator(algorithm: .crc32c).digest(of: blob) == CRC32C.digest(of: [UInt8]()))
    }

    @Test func foundationFileStreamAndBlobFileStreamAgree() throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let path = try ChecksumFixtures.writeFile(in: directory, name: "blob", count: 2_000_003, seed: 3)
        let viaFoundation = try ChecksumCalculator().digest(of: InputStream(fileAtPath: path)!)
        let viaBlob = try ChecksumCalculator().digest(of: BlobInputStream(fileAtPath: path))
        #expect(viaFoundation == viaBlob)
        #expect(viaBlob == SHA256.digest(of: ChecksumFixtures.bytes(count: 2_000_003, seed: 3)))
    }

    @Test func startOffsetAndProgress() throws {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.blob)))
        #expect(stream.setProperty(NSNumber(value: 1000), forKey: .fileCurrentOffsetKey))
        var reports: [TransferProgress] = []
        let digest = try ChecksumCalculator(algorithm: .sha1, bufferSize: 256 * 1024).digest(of: stream) {
            reports.append($0)
        }
        #expect(digest == SHA1.digest(of: Self.blob[1000...]))
        let total = Int64(Self.blob.count - 1000)
        // Hashing runs a buffer or two behind the reads, so reports may skip; but there are
        // several, they only grow, and the last one is the whole.
        #expect(reports.count >= 2)
        #expect(reports.allSatisfy { $0.totalBytes == total })
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedBytes < $1.completedBytes })
        #expect(reports.last?.completedBytes == total)
        #expect(reports.last?.fractionCompleted == 1)
        #expect(stream.streamStatus == .closed)
    }

    @Test(arguments: bufferSizes)
    func invalidatedSourceStillGivesTheWholeDigest(bufferSize: Int) throws {
        let source = ScriptedDataSource(bytes: Self.blob, staleOffsets: [0, 65_536, 1_000_001, Int64(Self.blob.count - 1)])
        let calculator = ChecksumCalculator(algorithm: .md5, bufferSize: bufferSize)
        let digest = try calculator.digest(of: BlobInputStream(dataSource: source))
        #expect(digest == MD5.digest(of: Self.blob))
        #expect(source.invalidations == 4)
    }

    @Test func missingFileFailsWithTheStreamsTypedError() {
        #expect(throws: BlobStreamError.notFound(resource: "/nonexistent/blobstream-checksum")) {
            try ChecksumCalculator().digest(of: BlobInputStream(fileAtPath: "/nonexistent/blobstream-checksum"))
        }
        // Foundation's file stream: mapped from its NSError (it does not know its path).
        #expect(throws: BlobStreamError.notFound(resource: "input stream")) {
            try ChecksumCalculator().digest(of: InputStream(fileAtPath: "/nonexistent/blobstream-checksum")!)
        }
        #expect(throws: BlobStreamError.isDirectory(path: "input stream")) {
            try ChecksumCalculator().digest(of: InputStream(fileAtPath: "/tmp")!)
        }
    }

    /// Buffer sizes that take the direct path (the blob fits in four buffers) and the
    /// pipelined one (hashing on a worker thread).
    static let bufferSizes = [4 << 20, 64 * 1024]

    @Test(arguments: bufferSizes)
    func aFailingReadNeverYieldsADigest(bufferSize: Int) {
        let error = BlobStreamError.network(url: "http://127.0.0.1/blob", reason: "connection reset")
        let source = FailingDataSource(bytes: Self.blob, failAt: 1_500_000, error: error)
        var lastProgress: Int64 = 0
        #expect(throws: error) {
            try ChecksumCalculator(bufferSize: bufferSize).digest(of: BlobInputStream(dataSource: source)) {
                lastProgress = $0.completedBytes
            }
        }
        #expect(lastProgress <= 1_500_000)
    }

    @Test func aShrinkingFileFailsWithUnexpectedEnd() throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let path = try ChecksumFixtures.writeFile(in: directory, name: "shrinks", count: 4 << 20, seed: 9)
        let stream = BlobInputStream(fileAtPath: path)
        let calculator = ChecksumCalculator(bufferSize: 1 << 20)
        #expect {
            try calculator.digest(of: stream) { progress in
                if progress.completedBytes == 1 << 20 { truncate(path, 2 << 20) }
            }
        } throws: { error in
            guard case BlobStreamError.unexpectedEnd(resource: path, offset: 2 << 20, expectedLength: 4 << 20) = error else {
                Issue.record("unexpected error \(error)")
                return false
            }
            return true
        }
    }

    @Test(arguments: bufferSizes)
    func cancelWakesABlockedRead(bufferSize: Int) async throws {
        let source = ScriptedDataSource(bytes: Self.blob)
        source.stallReads = true
        let calculator = ChecksumCalculator(bufferSize: bufferSize)
        let stream = Unchecked(BlobInputStream(dataSource: source))
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { calculator.cancel() }
        #expect(throws: BlobStreamError.cancelled) { try calculator.digest(of: stream.value) }
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(stream.value.streamStatus == .closed)
    }

    @Test func cancelBeforeStartAndReuseAreRefused() throws {
        let cancelled = ChecksumCalculator()
        cancelled.cancel()
        #expect(throws: BlobStreamError.cancelled) { try cancelled.digest(of: InputStream(data: Data([1, 2, 3]))) }

        let used = ChecksumCalculator()
        _ = try used.digest(of: InputStream(data: Data([1, 2, 3])))
        #expect {
            try used.digest(of: InputStream(data: Data([1, 2, 3])))
        } throws: { error in
            guard case BlobStreamError.sourceFailed(_, let reason) = error else { return false }
            return reason.contains("used before")
        }
    }

    @Test func anAsynchronousStreamIsDrivenByItsEventsWhileTheCallerWaits() throws {
        let source = ScriptedDataSource(bytes: Self.blob)
        source.wouldBlockDelay = 0.001
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        #expect(try ChecksumCalculator(algorithm: .crc32).digest(of: stream) == CRC32.digest(of: Self.blob))
    }
}
