import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// The async `read(into:)` of a stream, and digests computed with `await`.
@Suite struct AsyncReadTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [1000, 64 * 1024, 1 << 20])
    func readsEveryByteOfAFile(mode: BlobInputStream.Mode, readSize: Int) async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 3_000_001, seed: 31)
        let stream = BlobInputStream(fileAtPath: path, mode: mode)
        try stream.seek(to: 17)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 1)
        defer { buffer.deallocate() }
        var bytes: [UInt8] = []
        while true {
            let count = try await stream.read(into: buffer)
            if count == 0 { break }
            bytes.append(contentsOf: buffer.prefix(count))
        }
        #expect(bytes == TempFiles.pseudoRandomBytes(count: 3_000_001 - 17, seed: 31, from: 17))
        #expect(stream.streamStatus == .atEnd)
        stream.close()
    }

    @Test func readsAnHTTPResource() async throws {
        let blob = try ServedBlob(size: 2_000_000, seed: 32)
        defer { blob.remove() }
        let stream = try BlobInputStream.make(url: try blob.url(), mode: .asynchronous)
        var bytes: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 1)
        defer { buffer.deallocate() }
        while case let count = try await stream.read(into: buffer), count > 0 {
            bytes.append(contentsOf: buffer.prefix(count))
        }
        stream.close()
        #expect(bytes == blob.bytes)
    }

    @Test func cancellingAWaitingReadClosesTheSource() async throws {
        let source = ProbeDataSource(bytes: Array(repeating: 3, count: 500_000))
        let parked = LockedValue(false)
        source.onRead { offset, _ in
            guard offset >= 100_000 else { return .serve }
            parked.withLock { $0 = true }
            return .answer(.wouldBlock)
        }
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        stream.blockSize = 100_000
        let box = Unchecked(stream)
        let task = Task {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 1)
            defer { buffer.deallocate() }
            var total = 0
            while case let count = try await box.value.read(into: buffer), count > 0 { total += count }
            return total
        }
        #expect(await eventuallyAsync { parked.withLock { $0 } })
        task.cancel()
        let outcome = await task.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(stream.streamStatus == .closed)
        #expect(source.calls.last == .close, "\(source.calls)")
        #expect(source.violations.isEmpty)
    }

    @Test func aFailureIsThrownTyped() async throws {
        let source = ScriptedDataSource(bytes: Array(repeating: 1, count: 300_000))
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        stream.blockSize = 100_000
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 1)
        defer { buffer.deallocate() }
        #expect(try await stream.read(into: buffer) == 100_000)
        source.replace(with: Array(repeating: 2, count: 300_001))
        await #expect {
            while try await stream.read(into: buffer) > 0 {}
        } throws: { error in
            if case .sourceChanged? = error as? BlobStreamError { return true }
            return false
        }
        stream.close()
    }

    @Test(arguments: [Int64(0), 5, 1_048_576])
    func digestOfAFileURL(startOffset: Int64) async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        let size = 5_000_000
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 33)
        let expected = SHA256.digest(of: TempFiles.pseudoRandomBytes(count: size - Int(startOffset), seed: 33, from: Int(startOffset)))
        let digest = try await ChecksumAlgorithm.sha256.digest(of: URL(fileURLWithPath: path), startOffset: startOffset)
        #expect(digest == expected)
    }

    @Test(arguments: ChecksumAlgorithm.allCases)
    func digestOfAnHTTPResource(algorithm: ChecksumAlgorithm) async throws {
        let blob = try ServedBlob(size: 3_000_000, seed: 34)
        defer { blob.remove() }
        var reference = algorithm.makeChecksum()
        reference.update(blob.bytes)
        #expect(try await algorithm.digest(of: try blob.url()) == reference.finalize())
    }

    @Test func aDigestOfABlobThatChangesWhileItIsReadThrows() async throws {
        // The handle goes stale after the first mebibyte, and the reopen finds version 2.
        let source = ProbeDataSource(bytes: Array(repeating: 1, count: 3_000_000), versions: ["v1", "v2"])
        let stale = LockedValue(false)
        source.onRead { offset, _ in
            guard offset >= 1 << 20, !stale.withLock({ $0 }) else { return .serve }
            stale.withLock { $0 = true }
            return .answer(.invalidated)
        }
        await #expect {
            _ = try await ChecksumAlgorithm.sha256.digest(of: source)
        } throws: { error in
            if case .sourceChanged? = error as? BlobStreamError { return true }
            return false
        }
    }
}
