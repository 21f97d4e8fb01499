@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A stream positioned before its open (a resumed upload) starts the HTTP source's first
/// request at that offset: one request, not one from byte 0 that the first read cancels.
@Suite struct HTTPStartOffsetTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    /// Opens a stream over `blob` at `offset`, reads it to its end, and returns the bytes, the
    /// stream's error and the source's statistics. The read-ahead buffer holds the whole blob,
    /// so URLSession, too, needs one request for it.
    private func read(
        _ blob: ServedBlob, from offset: Int64, transport: HTTPDataSource.Transport
    ) async throws -> (bytes: [UInt8], error: BlobStreamError?, statistics: HTTPDataSource.Statistics) {
        let url = try blob.url()
        return try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 8 << 20, transport: transport))
            let stream = BlobInputStream(dataSource: source)
            try stream.seek(to: offset)
            stream.open()
            defer { stream.close() }
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while stream.streamStatus == .open || stream.streamStatus == .reading {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count <= 0 { break }
                output += buffer[0..<count]
            }
            return (output, stream.blobError, source.statistics)
        }
    }

    @Test(arguments: transports)
    func aStreamOpenedAtAnOffsetMakesOneRequest(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 3 * 1024 * 1024 + 11, seed: 21)
        defer { blob.remove() }
        let (bytes, error, statistics) = try await read(blob, from: 1_000_003, transport: transport)
        #expect(error == nil)
        #expect(bytes == Array(blob.bytes[1_000_003...]))
        #expect(statistics.requests == 1, "the first request starts at the stream's offset")
        #expect(statistics.reconnects == 0)
        #expect(statistics.bytesReceived == Int64(blob.bytes.count - 1_000_003), "no byte before the offset is downloaded")
    }

    @Test(arguments: transports)
    func aStreamOpenedAtItsEndReadsNothing(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 5000, seed: 22)
        defer { blob.remove() }
        let (bytes, error, statistics) = try await read(blob, from: 5000, transport: transport)
        #expect(error == nil)
        #expect(bytes.isEmpty)
        #expect(statistics.requests == 1)
    }

    @Test(arguments: transports)
    func aStreamOpenedPastItsEndIsAnInvalidOffset(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 5000, seed: 23)
        defer { blob.remove() }
        let (bytes, error, _) = try await read(blob, from: 5001, transport: transport)
        #expect(bytes.isEmpty)
        #expect(error == .invalidOffset(resource: try blob.url().absoluteString, offset: 5001, length: 5000))
    }
}
