import BlobStream
import Foundation
import Testing

/// The read-ahead is bounded: a slow reader pauses the download instead of growing memory.
@Suite struct HTTPDataSourceMemoryTests {
    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func slowReaderPausesTheDownload(transport: HTTPDataSource.Transport) throws {
        let size = 24 * 1024 * 1024
        let limit = 1024 * 1024
        let blob = try HTTPFixture.makeBlob(size: size, seed: 5)
        // A short idle timeout: time spent paused with a full buffer must not count.
        let source = HTTPDataSource(
            url: HTTPFixture.url(blob.path),
            configuration: .init(readAheadLimit: limit, idleTimeout: 0.3, transport: transport))
        let reader = SourceReader(source: source)
        _ = try reader.open().get()

        var mostAhead: Int64 = 0
        var pausedAtFullBuffer = false
        let bytes = try reader.readToEnd(chunk: 64 * 1024) { offset in
            let statistics = source.statistics
            mostAhead = max(mostAhead, statistics.bytesReceived - offset)
            #expect(statistics.bufferedBytes <= limit)
            if offset < Int64(size / 4) {
                Thread.sleep(forTimeInterval: 0.002)
            } else if !pausedAtFullBuffer {
                Thread.sleep(forTimeInterval: 1)
                pausedAtFullBuffer = true
                let after = source.statistics
                #expect(after.bufferedBytes == limit || after.bytesReceived == Int64(size), "the buffer filled while the reader slept")
                #expect(after.bytesReceived - offset <= Int64(limit), "nothing beyond the buffer was downloaded")
            }
        }.get()
        #expect(bytes == blob.bytes)
        #expect(mostAhead <= Int64(limit), "downloaded at most the buffer ahead of the reader (was \(mostAhead))")
        #expect(mostAhead > Int64(limit / 2), "the download ran ahead of the slow reader (was \(mostAhead))")
        source.close()
    }
}
