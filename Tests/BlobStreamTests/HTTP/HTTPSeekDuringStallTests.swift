import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// An asynchronous stream over HTTP whose refill waits for a stalled server: a seek must start
/// a request at the new offset at once, not wait for the old transfer's idle timeout.
@Suite struct HTTPSeekDuringStallTests {
    /// Counts what an asynchronous stream delivers and signals each delivery.
    private final class Collector: NSObject, StreamDelegate, @unchecked Sendable {
        let delivered = Locked<[UInt8]>([])
        let failure = Locked<BlobStreamError?>(nil)
        let progress = DispatchSemaphore(value: 0)
        private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

        func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
            guard let stream = aStream as? BlobInputStream else { return }
            switch eventCode {
            case .hasBytesAvailable:
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count > 0 {
                    let bytes = buffer[0..<count]
                    delivered.mutate { $0.append(contentsOf: bytes) }
                    progress.signal()
                }
            case .errorOccurred:
                failure.value = stream.blobError
                progress.signal()
            default:
                break
            }
        }

        /// Waits until `count` bytes in all arrived, or fails after `timeout`.
        func wait(forTotal count: Int, timeout: TimeInterval) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while delivered.value.count < count && failure.value == nil {
                if progress.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow)) == .timedOut { return false }
            }
            return failure.value == nil
        }
    }

    @Test(arguments: [HTTPDataSource.Transport.automatic, .urlSession])
    func aSeekBackWhileTheServerStallsReadsTheNewOffsetAtOnce(transport: HTTPDataSource.Transport) async throws {
        try TestServers.requireNginx()
        try TestServers.requireStallServer()
        // The server sends 100,000 bytes of a 200,000-byte body, then nothing. An idle timeout
        // of ten minutes means only the seek itself can make bytes arrive again.
        let url = TestServers.stallURL(afterBytes: 100_000, total: 200_000)
        let source = HTTPDataSource(
            url: url, configuration: .init(requestTimeout: 600, idleTimeout: 600, maxRetries: 0, transport: transport))
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        let collector = Collector()
        stream.delegate = collector
        stream.delegateQueue = DispatchQueue(label: "HTTPSeekDuringStallTests")
        defer { stream.close() }

        let unchecked = Unchecked(stream)
        let (beforeSeek, afterSeek) = try await blocking {
            let stream = unchecked.value
            stream.open()
            let first = collector.wait(forTotal: 100_000, timeout: 60)
            // The refill is now parked on the stalled transfer.
            Thread.sleep(forTimeInterval: 0.3)
            guard stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey) else { return (first, false) }
            // Before the fix nothing arrived until the idle timeout (here: ten minutes).
            let second = collector.wait(forTotal: 200_000, timeout: 60)
            return (first, second)
        }
        #expect(beforeSeek)
        #expect(afterSeek, "no bytes after the seek: \(String(describing: collector.failure.value))")
        let bytes = collector.delivered.value
        try #require(bytes.count >= 200_000)
        // Offsets 0..<100,000 twice: the stall server's pattern is the byte's offset mod 256.
        #expect(bytes[0..<100_000].elementsEqual((0..<100_000).map { UInt8(truncatingIfNeeded: $0) }))
        #expect(bytes[100_000..<200_000].elementsEqual((0..<100_000).map { UInt8(truncatingIfNeeded: $0) }))
    }
}
