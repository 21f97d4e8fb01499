import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The stream tells its source where it will read first whenever it opens it: the offset it was
/// positioned at before its open, and the one it had reached when it reopens after an
/// invalidation. A source that must start slow work (an HTTP request) starts it there.
@Suite struct StartOffsetTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func theSourceLearnsTheOffsetOfTheOpenAndOfEveryReopen(mode: BlobInputStream.Mode) throws {
        let source = InvalidationTests.goesStaleOnce(at: 500, versions: ["v1"])
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 100
        try stream.seek(to: 200)
        let result = StreamHarness.drain(stream, chunk: 100)
        #expect(result.error == nil)
        #expect(result.bytes.count == 800)
        #expect(source.openOffsets == [200, 500])
    }
}
