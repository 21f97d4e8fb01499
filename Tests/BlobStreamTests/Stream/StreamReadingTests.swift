import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Reads, offsets, the block cache and bad input.
@Suite struct StreamReadingTests {
    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 7) }
    }

    /// Reads `stream` to the end synchronously with reads of `chunk` bytes.
    static func drain(_ stream: InputStream, chunk: Int) -> (bytes: [UInt8], result: Int) {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let count = stream.read(&buffer, maxLength: chunk)
            if count <= 0 { return (output, count) }
            output.append(contentsOf: buffer[0..<count])
        }
    }

    @Test func oneByteReads() {
        let bytes = Self.pattern(1000)
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)))
        stream.open()
        #expect(stream.streamStatus == .open)
        let (read, last) = Self.drain(stream, chunk: 1)
        #expect(read == bytes)
        #expect(last == 0)
        #expect(stream.streamStatus == .atEnd)
        #expect(!stream.hasBytesAvailable)
    }

    @Test func hugeReads() {
        let bytes = Self.pattern(3_000_001)
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)))
        stream.open()
        let (read, last) = Self.drain(stream, chunk: 16 << 20)
        #expect(read == bytes)
        #expect(last == 0)
    }

    @Test func hasBytesAvailableStaysTrueUntilTheRealEnd() {
        let source = ScriptedDataSource(bytes: Self.pattern(100), hidesLength: true)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        // The length is unknown, so the end is only known once a read finds it.
        #expect(stream.hasBytesAvailable)
        #expect(stream.read(&buffer, maxLength: 100) == 0)
        #expect(!stream.hasBytesAvailable)
        #expect(stream.streamStatus == .atEnd)
    }

    @Test func manySmallReadsCostOneSourceCallPerBlock() {
        let bytes = Self.pattern(1 << 20)
        let source = ScriptedDataSource(bytes: bytes)
        let stream = BlobInputStream(dataSource: source)
        stream.blockSize = 256 * 1024
        stream.open()
        let (read, _) = Self.drain(stream, chunk: 100)
        #expect(read == bytes)
        #expect(source.readCount == 4)
    }

    @Test func readsOfBlockSizeGoStraightToTheCaller() {
        let bytes = Self.pattern(1 << 20)
        let source = ScriptedDataSource(bytes: bytes)
        let stream = BlobInputStream(dataSource: source)
        stream.blockSize = 64 * 1024
        stream.open()
        let (read, _) = Self.drain(stream, chunk: 128 * 1024)
        #expect(read == bytes)
        #expect(source.readCount == 8)
    }

    @Test func readsJustUnderTheBlockSizeAreNeverShort() {
        // libcurl reads 65,524 bytes at a time; a 64 KiB cache must not leave 12-byte remnants.
        let bytes = Self.pattern(10 << 20)
        let source = ScriptedDataSource(bytes: bytes)
        let stream = BlobInputStream(dataSource: source)
        stream.blockSize = 65_536
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 65_524)
        var output: [UInt8] = []
        var shortReads = 0
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            if count < buffer.count && output.count + count < bytes.count { shortReads += 1 }
            output.append(contentsOf: buffer[0..<count])
        }
        #expect(output == bytes)
        #expect(shortReads == 0)
        // One source call per whole block (the source contract), never one per short read; the
        // known length ends the stream.
        #expect(source.readCount == (bytes.count + 65_535) / 65_536)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func startOffsetBeforeOpen(mode: BlobInputStream.Mode) throws {
        let bytes = Self.pattern(10_000)
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)), mode: mode)
        #expect(stream.setProperty(NSNumber(value: 1234), forKey: .fileCurrentOffsetKey))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 1234)
        let read = try StreamHarness.readAll(stream)
        #expect(read == Array(bytes[1234...]))
    }

    @Test func seekAfterOpen() {
        let bytes = Self.pattern(10_000)
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(bytes)))
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        #expect(stream.setProperty(NSNumber(value: 5000), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        #expect(buffer == Array(bytes[5000..<5010]))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.int64Value == 5010)
        // Back from the end.
        #expect(stream.setProperty(NSNumber(value: 10_000), forKey: .fileCurrentOffsetKey))
        #expect(stream.streamStatus == .atEnd)
        #expect(stream.setProperty(NSNumber(value: 9_995), forKey: .fileCurrentOffsetKey))
        #expect(Self.drain(stream, chunk: 64).bytes == Array(bytes[9_995...]))
    }

    @Test func badOffsetsAreRefused() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.pattern(100))))
        #expect(!stream.setProperty(NSNumber(value: -1), forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty("12" as NSString, forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(NSNumber(value: 1), forKey: .socketSecurityLevelKey))
        stream.open()
        #expect(!stream.setProperty(NSNumber(value: 101), forKey: .fileCurrentOffsetKey))
        #expect(!stream.setProperty(NSNumber(value: -5), forKey: .fileCurrentOffsetKey))
        #expect(stream.offset == 0)
    }

    @Test func offsetsThatAreNoWholeNumberOfBytesAreRefused() {
        let refused: [NSNumber] = [
            NSNumber(value: 1.5), NSNumber(value: Float(2.5)), NSNumber(value: -0.5), NSNumber(value: Double.nan),
            NSNumber(value: Double.infinity), NSNumber(value: 1e30), NSNumber(value: UInt64.max), NSNumber(value: -1.0),
        ]
        for mode in [BlobInputStream.Mode.synchronous, .asynchronous] {
            for opened in [false, true] {
                let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.pattern(100))), mode: mode)
                if opened { stream.open() }
                for value in refused {
                    #expect(!stream.setProperty(value, forKey: .fileCurrentOffsetKey), "\(value) was accepted")
                }
                #expect(stream.offset == 0)
                // A whole number is a whole number, whatever its type.
                #expect(stream.setProperty(NSNumber(value: 7.0), forKey: .fileCurrentOffsetKey))
                #expect(stream.offset == 7)
                #expect(stream.setProperty(NSNumber(value: UInt64(9)), forKey: .fileCurrentOffsetKey))
                #expect(stream.offset == 9)
                stream.close()
            }
        }
    }

    @Test func startOffsetPastTheEndFailsTheOpen() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.pattern(100))))
        #expect(stream.setProperty(NSNumber(value: 101), forKey: .fileCurrentOffsetKey))
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .invalidOffset(resource: "memory", offset: 101, length: 100))
    }

    @Test func readBeforeOpenAfterCloseAndZeroLength() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(Self.pattern(100))))
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(stream.read(&buffer, maxLength: 10) == -1)
        #expect(stream.blobError == .notOpen)
        #expect(stream.streamStatus == .notOpen)
        stream.open()
        #expect(stream.read(&buffer, maxLength: 0) == 0)
        #expect(stream.streamStatus == .open)
        #expect(stream.read(&buffer, maxLength: 10) == 10)
        stream.close()
        #expect(stream.read(&buffer, maxLength: 10) == -1)
        #expect(stream.blobError == .closed)
        var pointer: UnsafeMutablePointer<UInt8>?
        var length = 0
        #expect(!stream.getBuffer(&pointer, length: &length))
    }

    @Test func errorsLeaveHasBytesAvailableTrueSoTheyAreReadNotMistakenForTheEnd() {
        let source = ScriptedDataSource(bytes: Self.pattern(100))
        source.openBehaviour = .fail(.notFound(resource: "scripted"))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.hasBytesAvailable)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
        #expect(stream.blobError == .notFound(resource: "scripted"))
    }

    @Test func closeWakesABlockedRead() throws {
        let source = ScriptedDataSource(bytes: Self.pattern(100))
        source.stallReads = true
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let reader = BackgroundRead(stream, count: 10)
        #expect(eventually { stream.streamStatus == .reading })
        #expect(reader.wait(timeout: 0.2) == nil)
        let closed = Date()
        stream.close()
        #expect(reader.wait(timeout: 5) == -1)
        #expect(Date().timeIntervalSince(closed) < 2)
        #expect(stream.blobError == .closed)
        #expect(source.closeCount >= 1)
    }

    @Test func aStalledSourceTimesOut() {
        let source = ScriptedDataSource(bytes: Self.pattern(100))
        source.stallReads = true
        let stream = BlobInputStream(dataSource: source)
        stream.readTimeout = 0.2
        stream.open()
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
        guard case .timedOut(resource: "scripted", operation: _, seconds: 0.2)? = stream.blobError else {
            Issue.record("expected a read time-out, got \(String(describing: stream.blobError))")
            return
        }
    }

    @Test func anOpenThatNeverCompletesTimesOut() {
        let source = ScriptedDataSource(bytes: Self.pattern(100))
        source.openBehaviour = .never
        let stream = BlobInputStream(dataSource: source)
        stream.openTimeout = 0.2
        let started = Date()
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .timedOut(resource: "scripted", operation: "open", seconds: 0.2))
        #expect(Date().timeIntervalSince(started) < 2)
    }

    @Test func delayedBytesArriveInSynchronousMode() {
        let bytes = Self.pattern(300_000)
        let source = ScriptedDataSource(bytes: bytes, preferredBlockSize: 10_000)
        source.wouldBlockDelay = 0.001
        source.openBehaviour = .later(delay: 0.01)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(stream.streamStatus == .open)
        #expect(Self.drain(stream, chunk: 4096).bytes == bytes)
    }
}
