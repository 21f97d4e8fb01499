import BlobStream
import Foundation
import Testing

/// Reading blobs from nginx through the data-source contract, on both transports.
@Suite struct HTTPDataSourceReadingTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    @Test(arguments: transports)
    func fullReadMatchesTheFileAndPinsLengthAndVersion(transport: HTTPDataSource.Transport) throws {
        let blob = try HTTPFixture.makeBlob(size: 3 * 1024 * 1024 + 17)
        let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(readAheadLimit: 1 << 20, transport: transport))
        let reader = SourceReader(source: source)
        let description = try reader.open().get()
        #expect(description.length == Int64(blob.bytes.count))
        #expect(description.identity?.hasPrefix("\"") == true, "nginx's ETag is the version: \(description.identity ?? "nil")")
        let bytes = try reader.readToEnd().get()
        #expect(bytes == blob.bytes)
        #expect(try reader.read(at: Int64(blob.bytes.count), count: 10) == .end)
        source.close()
    }

    @Test(arguments: transports)
    func readsFromOffsetsAndSeeksBothWays(transport: HTTPDataSource.Transport) throws {
        let blob = try HTTPFixture.makeBlob(size: 2 * 1024 * 1024)
        let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(readAheadLimit: 256 * 1024, transport: transport))
        let reader = SourceReader(source: source)
        _ = try reader.open().get()
        for offset in [1_500_000, 7, 2 * 1024 * 1024 - 5, 0, 1_000_001] {
            var buffer = [UInt8](repeating: 0, count: 4096)
            guard case .read(let count) = try reader.read(at: Int64(offset), into: &buffer) else {
                Issue.record("no bytes at offset \(offset)")
                continue
            }
            #expect(count > 0)
            #expect(Array(buffer[0..<count]) == Array(blob.bytes[offset..<offset + count]), "bytes at offset \(offset)")
        }
        let tail = try reader.readToEnd(from: 1_999_999).get()
        #expect(tail == Array(blob.bytes[1_999_999...]))
        source.close()
    }

    @Test(arguments: transports)
    func reopenContinuesAtTheReadersOffset(transport: HTTPDataSource.Transport) throws {
        let blob = try HTTPFixture.makeBlob(size: 600_000)
        let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(transport: transport))
        let reader = SourceReader(source: source)
        let first = try reader.open().get()
        _ = try reader.read(at: 0, count: 100_000)
        source.close()
        #expect(try reader.open().get() == first)
        let rest = try reader.readToEnd(from: 100_000).get()
        #expect(rest == Array(blob.bytes[100_000...]))
        source.close()
    }

    @Test func emptyBlobEndsAtOnce() throws {
        let blob = try HTTPFixture.makeBlob(size: 0)
        for transport in Self.transports {
            let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(transport: transport))
            let reader = SourceReader(source: source)
            #expect(try reader.open().get().length == 0)
            #expect(try reader.read(at: 0, count: 10) == .end)
            source.close()
        }
    }

    @Test func serverWithoutRangeSupportIsReadBySkipping() throws {
        let blob = try HTTPFixture.makeBlob(size: 1_000_000)
        let source = HTTPDataSource(url: HTTPFixture.url(blob.path, prefix: "norange/"))
        let reader = SourceReader(source: source)
        #expect(try reader.open().get().length == 1_000_000)
        let tail = try reader.readToEnd(from: 654_321).get()
        #expect(tail == Array(blob.bytes[654_321...]))
        #expect(source.statistics.bytesReceived >= 1_000_000, "the skipped bytes were downloaded too")
        source.close()
    }

    @Test func serverWithoutRangeSupportOverURLSessionFailsClearlyWhenTheBlobExceedsTheBuffer() throws {
        let blob = try HTTPFixture.makeBlob(size: 1_000_000)
        let source = HTTPDataSource(
            url: HTTPFixture.url(blob.path, prefix: "norange/"),
            configuration: .init(readAheadLimit: 128 * 1024, transport: .urlSession))
        let reader = SourceReader(source: source)
        _ = try reader.open().get()
        let result = try reader.readToEnd()
        guard case .failure(.sourceFailed(_, let reason)) = result else {
            Issue.record("expected a clear failure, got \(result)")
            return
        }
        #expect(reason.contains("ignores Range"))
        source.close()
    }

    @Test(arguments: transports)
    func chunkedResponseOfUnknownLengthIsReadToItsEnd(transport: HTTPDataSource.Transport) throws {
        let blob = try HTTPFixture.makeBlob(size: 700_001)
        let source = HTTPDataSource(
            url: HTTPFixture.url(blob.path, prefix: "chunked/"),
            configuration: .init(readAheadLimit: 1 << 20, transport: transport))
        let reader = SourceReader(source: source)
        #expect(try reader.open().get().length == nil)
        #expect(try reader.readToEnd().get() == blob.bytes)
        source.close()
    }

    @Test(arguments: transports)
    func redirectIsFollowed(transport: HTTPDataSource.Transport) throws {
        let blob = try HTTPFixture.makeBlob(size: 300_000)
        let name = String(blob.path.dropFirst("http-tests/".count))
        try HTTPFixture.write(blob.bytes, to: "upload/" + name)
        let source = HTTPDataSource(url: HTTPFixture.url(name, prefix: "redirect-put/"), configuration: .init(transport: transport))
        let reader = SourceReader(source: source)
        _ = try reader.open().get()
        #expect(try reader.readToEnd().get() == blob.bytes)
        source.close()
    }
}
