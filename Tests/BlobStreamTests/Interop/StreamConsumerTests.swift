import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Consumers of `InputStream` other than URLSession, reading a BlobInputStream.
@Suite struct StreamConsumerTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func aChecksumOfASourceThatChangedBeforeItsEndThrows(mode: BlobInputStream.Mode, hidesLength: Bool) {
        let source = ProbeDataSource(bytes: StreamReadingTests.pattern(3_000_000), hidesLength: hidesLength)
        let changed = BlobStreamError.sourceChanged(resource: "probe", offset: 3_000_000, reason: "rewritten in place")
        source.answerConfirm(with: changed)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        #expect(throws: changed) {
            try ChecksumCalculator(algorithm: .sha256, bufferSize: 100_000).digest(of: stream)
        }
        #expect(source.confirmCount == 1)
    }
}
