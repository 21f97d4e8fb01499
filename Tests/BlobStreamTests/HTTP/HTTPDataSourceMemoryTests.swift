@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The read-ahead is bounded: a slow reader pauses the download instead of growing memory.
@Suite struct HTTPDataSourceMemoryTests {
    private struct Observation: Sendable {
        var bytes: [UInt8] = []
        /// The most bytes downloaded beyond what the reader had consumed, at any read.
        var mostAhead: Int64 = 0
        var mostBuffered = 0
        /// The statistics after the reader slept for a second, and its offset then.
        var afterSleep: HTTPDataSource.Statistics?
        var offsetAtSleep: Int64 = 0
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func slowReaderPausesTheDownload(transport: HTTPDataSource.Transport) async throws {
        let size = 24 * 1024 * 1024
        let limit = 1024 * 1024
        let blob = try ServedBlob(size: size, seed: 5)
        defer { blob.remove() }
        let url = try blob.url()
        let seen = try await blocking {
            // A short idle timeout: time spent paused with a full buffer must not count.
            let source = HTTPDataSource(
                url: url,
                configuration: .init(readAheadLimit: limit, idleTimeout: 0.3, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            var seen = Observation()
            seen.bytes = try reader.readToEnd(chunk: 64 * 1024) { offset in
                let statistics = source.statistics
                seen.mostAhead = max(seen.mostAhead, statistics.bytesReceived - offset)
                seen.mostBuffered = max(seen.mostBuffered, statistics.bufferedBytes)
                if offset < Int64(size / 4) {
                    Thread.sleep(forTimeInterval: 0.002)
                } else if seen.offsetAtSleep == 0 {
                    Thread.sleep(forTimeInterval: 1)
                    seen.offsetAtSleep = offset
                    seen.afterSleep = source.statistics
                }
            }.get()
            return seen
        }
        #expect(seen.bytes == blob.bytes)
        #expect(seen.mostBuffered <= limit)
        #expect(seen.mostAhead <= Int64(limit), "downloaded at most the buffer ahead of the reader (was \(seen.mostAhead))")
        #expect(seen.mostAhead > Int64(limit / 2), "the download ran ahead of the slow reader (was \(seen.mostAhead))")
        // In a second the download could have fetched the whole blob; it stopped with the buffer
        // between half full (it resumes only once half is free) and full.
        let ahead = (seen.afterSleep?.bytesReceived ?? 0) - seen.offsetAtSleep
        #expect(ahead >= Int64(limit / 2) && ahead <= Int64(limit), "the download paused while the reader slept (\(ahead) bytes ahead)")
    }
}
