import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A source whose handle goes stale mid-stream is reopened and read on at the same byte.
@Suite struct InvalidationTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [1, 2, 3, 4, 5, 6, 7, 8])
    func randomStaleOffsetsGiveIdenticalBytes(mode: BlobInputStream.Mode, seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let size = Int.random(in: 1...2_000_000, using: &generator)
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let stale = Set((0..<20).map { _ in Int64.random(in: 0..<Int64(size), using: &generator) })
        let source = ScriptedDataSource(bytes: bytes, staleOffsets: stale, preferredBlockSize: 32 * 1024)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        let chunk = [1, 100, 4096, 65_536, 1 << 20].randomElement(using: &generator)!
        let read = try StreamHarness.readAll(stream, chunk: chunk)
        #expect(read == bytes)
        #expect(source.remainingStaleOffsets.isEmpty)
        #expect(source.invalidations == stale.count)
        #expect(source.openCount == stale.count + 1)
    }

    /// The reopen that finds another version leaves no source open behind it, even when the
    /// stream is never closed.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aReopenOnAnotherVersionClosesTheSource(mode: BlobInputStream.Mode) throws {
        let source = ScriptedDataSource(bytes: Array(repeating: 1, count: 100_000), staleOffsets: [50_000])
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 10_000
        stream.open()
        source.replace(with: Array(repeating: 2, count: 100_001))
        var buffer = [UInt8](repeating: 0, count: 10_000)
        while stream.streamStatus != .error && stream.streamStatus != .atEnd {
            if mode == .asynchronous && !stream.hasBytesAvailable {
                Thread.sleep(forTimeInterval: 0.001)
                continue
            }
            _ = stream.read(&buffer, maxLength: buffer.count)
        }
        guard case .sourceChanged? = stream.blobError else {
            Issue.record("expected sourceChanged, got \(String(describing: stream.blobError))")
            return
        }
        #expect(eventually { source.closeCount == source.openCount }, "opened \(source.openCount) times, closed \(source.closeCount)")
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aChangedBlobFailsInsteadOfMixingVersions(mode: BlobInputStream.Mode) throws {
        let source = ScriptedDataSource(bytes: Array(repeating: 1, count: 100_000))
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 10_000
        stream.open()
        if mode == .asynchronous {
            #expect(eventually { stream.hasBytesAvailable })
        }
        var buffer = [UInt8](repeating: 0, count: 10_000)
        #expect(stream.read(&buffer, maxLength: 10_000) == 10_000)
        source.replace(with: Array(repeating: 2, count: 100_001))
        var failedAt: Int64 = 10_000
        if mode == .synchronous {
            #expect(stream.read(&buffer, maxLength: 10_000) == -1)
        } else {
            // The block after the first was cached before the change; taking it starts the
            // refill that meets the new version.
            #expect(stream.read(&buffer, maxLength: 10_000) == 10_000)
            #expect(buffer.allSatisfy { $0 == 1 })
            failedAt = 20_000
        }
        #expect(eventually { stream.streamStatus == .error })
        guard case .sourceChanged(resource: "scripted", offset: failedAt, reason: let reason)? = stream.blobError else {
            Issue.record("expected sourceChanged, got \(String(describing: stream.blobError))")
            return
        }
        #expect(reason.contains("100000") && reason.contains("100001"))
    }

    @Test func aSameLengthNewVersionFailsToo() {
        let source = ScriptedDataSource(bytes: Array(repeating: 1, count: 100_000), preferredBlockSize: 10_000)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 10_000)
        #expect(stream.read(&buffer, maxLength: 10_000) == 10_000)
        source.replace(with: Array(repeating: 2, count: 100_000))
        #expect(stream.read(&buffer, maxLength: 10_000) == -1)
        guard case .sourceChanged(resource: "scripted", offset: 10_000, reason: let reason)? = stream.blobError else {
            Issue.record("expected sourceChanged, got \(String(describing: stream.blobError))")
            return
        }
        #expect(reason.contains("version"))
    }

    /// A source whose handle goes stale once at `staleAt` and whose opens report `versions`.
    static func goesStaleOnce(at staleAt: Int64, versions: [String?]) -> ProbeDataSource {
        let source = ProbeDataSource(bytes: Array(repeating: 7, count: 1000), versions: versions, preferredBlockSize: 100)
        let stale = Locked(true)
        source.onRead { offset, _ in
            guard offset == staleAt else { return .serve }
            let first = stale.mutate { (pending: inout Bool) -> Bool in
                defer { pending = false }
                return pending
            }
            return first ? .answer(.invalidated) : .serve
        }
        return source
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aVersionThatDisappearsOnReopenIsAChange(mode: BlobInputStream.Mode) {
        let source = Self.goesStaleOnce(at: 500, versions: ["etag-v1", nil])
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 100
        let result = StreamHarness.drain(stream, chunk: 100)
        #expect(result.bytes.count == 500)
        #expect(result.error == .sourceChanged(
            resource: "probe", offset: 500, reason: "the version was \"etag-v1\" and is now unknown"))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aVersionUnknownFromTheStartCannotBeCompared(mode: BlobInputStream.Mode) throws {
        // Nothing was pinned, so nothing can be contradicted: the length alone is compared.
        let source = Self.goesStaleOnce(at: 500, versions: [nil, "etag-v2"])
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 100
        #expect(try StreamHarness.readAll(stream, chunk: 100).count == 1000)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func reopensAreBounded(mode: BlobInputStream.Mode) {
        // Stale at the same offset on every open: no progress is possible.
        final class AlwaysStale: BlobDataSource, @unchecked Sendable {
            let resourceName = "always-stale"
            func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
                completion(.success(BlobSourceDescription(length: 10)))
            }
            func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
                .invalidated
            }
            func close() {}
        }
        let stream = BlobInputStream(dataSource: AlwaysStale(), mode: mode)
        stream.maxConsecutiveReopens = 3
        #expect(throws: BlobStreamError.invalidatedTooOften(resource: "always-stale", offset: 0, attempts: 4)) {
            try StreamHarness.readAll(stream, timeout: 10)
        }
    }

    /// A synchronous read that took bytes from the cache first, then found the source stale
    /// past them, names where the source went stale, not where the read began.
    @Test func aStaleSourcePastCachedBytesIsNamedWhereItWentStale() throws {
        let source = ProbeDataSource(bytes: Array(repeating: 7, count: 200), preferredBlockSize: 100)
        source.onRead { offset, _ in offset >= 100 ? .answer(.invalidated) : .serve }
        let stream = BlobInputStream(dataSource: source)
        stream.blockSize = 100
        stream.maxConsecutiveReopens = 2
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 150)
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        // 90 cached bytes, then the source at 100, stale on every open.
        #expect(stream.read(&buffer, maxLength: 150) == -1)
        #expect(stream.blobError == .invalidatedTooOften(resource: "probe", offset: 100, attempts: 3))
    }

    @Test func slowReopenBlocksOnlyTheSynchronousReader() throws {
        let bytes = (0..<500_000).map { UInt8(truncatingIfNeeded: $0) }
        let source = ScriptedDataSource(bytes: bytes, staleOffsets: [100_000, 300_000])
        source.openBehaviour = .later(delay: 0.02)
        #expect(try StreamHarness.readAll(BlobInputStream(dataSource: source), chunk: 7000) == bytes)
        let asyncSource = ScriptedDataSource(bytes: bytes, staleOffsets: [100_000, 300_000])
        asyncSource.openBehaviour = .later(delay: 0.02)
        #expect(try StreamHarness.readAll(BlobInputStream(dataSource: asyncSource, mode: .asynchronous), chunk: 7000) == bytes)
    }
}
