import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The BlobDataSource contract: the stream asks for at least its block size at a time, unless
/// the blob ends sooner, whatever size the consumer reads.
@Suite struct BlockContractTests {
    static let bytes = StreamReadingTests.pattern(1_000_003)

    /// Every read `source` saw asked for a whole block, or for all the bytes left.
    static func everyReadAskedForABlock(_ source: ProbeDataSource, blockSize: Int, length: Int?) -> [ProbeDataSource.Call] {
        source.reads.filter { call in
            guard case .read(let offset, let capacity) = call else { return false }
            if capacity >= blockSize { return false }
            guard let length else { return true }
            return Int64(capacity) != Int64(length) - offset
        }
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [40_000, 65_524, 1, 100_000, 65_536])
    func readsOfAnySizeAskTheSourceForWholeBlocks(mode: BlobInputStream.Mode, chunk: Int) throws {
        for hidesLength in [false, true] {
            let source = ProbeDataSource(bytes: Self.bytes, hidesLength: hidesLength)
            let stream = BlobInputStream(dataSource: source, mode: mode)
            stream.blockSize = 65_536
            #expect(try StreamHarness.readAll(stream, chunk: chunk) == Self.bytes)
            let small = Self.everyReadAskedForABlock(source, blockSize: 65_536, length: hidesLength ? nil : Self.bytes.count)
            #expect(small.isEmpty, "chunk \(chunk), hidden length \(hidesLength): \(small.prefix(3))")
            #expect(source.violations.isEmpty)
        }
    }

    @Test func readsJustUnderTheBlockSizeStayFullAndCostOneSourceReadEach() {
        // libcurl reads 65,524 bytes at a time (40,000 here and there for others). Filling whole
        // blocks must not bring back the few-byte remnant that made every other read short.
        for chunk in [65_524, 40_000] {
            let source = ProbeDataSource(bytes: Self.bytes)
            let stream = BlobInputStream(dataSource: source)
            stream.blockSize = 65_536
            stream.open()
            var buffer = [UInt8](repeating: 0, count: chunk)
            var output: [UInt8] = []
            var shortReads = 0
            while true {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count <= 0 { break }
                if count < buffer.count && output.count + count < Self.bytes.count { shortReads += 1 }
                output.append(contentsOf: buffer[0..<count])
            }
            #expect(output == Self.bytes)
            #expect(shortReads == 0, "chunk \(chunk)")
            #expect(source.reads.count == (Self.bytes.count + 65_535) / 65_536, "chunk \(chunk)")
        }
    }
}
