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

    @Test(arguments: transports)
    func aSourceOpenedAtItsEndThenReadFromTheStartPinsTheVersionOfItsFirstBytes(transport: HTTPDataSource.Transport) async throws {
        // nginx's 416 names the length but no validator, so the open at the end pins no version.
        // Nothing was read under it: the first answer with bytes pins its own (and a reader
        // that seeks back gets the blob, not "another version"), and every later one is held
        // to it.
        let blob = try ServedBlob(size: 5000, seed: 24)
        defer { blob.remove() }
        let url = try blob.url()
        let (atEnd, whole, afterReplace) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1024, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            let atEnd = try reader.open(at: 5000).get()
            let whole = try reader.readToEnd(from: 0, chunk: 1000)
            try blob.replace(with: TempFiles.pseudoRandomBytes(count: 5000, seed: 25))
            return (atEnd, whole, try reader.read(at: 0, count: 1000))
        }
        #expect(atEnd.length == 5000)
        #expect(atEnd.version == nil)
        switch whole {
        case .success(let bytes):
            let identical = bytes == blob.bytes
            #expect(identical, "read \(bytes.count) bytes from the start, not the blob's 5000")
        case .failure(let error):
            Issue.record("reading from the start after an open at the end failed: \(error)")
        }
        guard case .failed(.sourceChanged(let resource, 0, _)) = afterReplace else {
            Issue.record("a read after the blob was replaced gave \(afterReplace), not sourceChanged at offset 0")
            return
        }
        #expect(resource == url.absoluteString)
    }
}
