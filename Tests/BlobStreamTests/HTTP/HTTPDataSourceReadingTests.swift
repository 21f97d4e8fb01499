@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Reading blobs from nginx through the data-source contract, on both transports.
@Suite struct HTTPDataSourceReadingTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    @Test(arguments: transports)
    func fullReadMatchesTheFileAndPinsLengthAndVersion(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 3 * 1024 * 1024 + 17)
        defer { blob.remove() }
        let url = try blob.url()
        let (description, bytes, atEnd) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1 << 20, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            return (try reader.open().get(), try reader.readToEnd().get(), try reader.read(at: Int64(blob.bytes.count), count: 10))
        }
        #expect(description.length == Int64(blob.bytes.count))
        #expect(description.version?.hasPrefix("\"") == true, "nginx's ETag is the version: \(description.version ?? "nil")")
        #expect(bytes == blob.bytes)
        #expect(atEnd == .end)
    }

    @Test(arguments: transports)
    func readsFromOffsetsAndSeeksBothWays(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 2 * 1024 * 1024)
        defer { blob.remove() }
        let url = try blob.url()
        let offsets = [1_500_000, 7, 2 * 1024 * 1024 - 5, 0, 1_000_001]
        let (pieces, tail) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 256 * 1024, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            var pieces: [[UInt8]] = []
            for offset in offsets {
                var buffer = [UInt8](repeating: 0, count: 4096)
                guard case .read(let count) = try reader.read(at: Int64(offset), into: &buffer) else {
                    throw TestSupportError("no bytes at offset \(offset)")
                }
                pieces.append(Array(buffer[0..<count]))
            }
            return (pieces, try reader.readToEnd(from: 1_999_999).get())
        }
        for (offset, piece) in zip(offsets, pieces) {
            #expect(!piece.isEmpty)
            #expect(piece == Array(blob.bytes[offset..<offset + piece.count]), "bytes at offset \(offset)")
        }
        #expect(tail == Array(blob.bytes[1_999_999...]))
    }

    @Test(arguments: transports)
    func reopenContinuesAtTheReadersOffset(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 600_000)
        defer { blob.remove() }
        let url = try blob.url()
        let (first, second, rest) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            let first = try reader.open().get()
            _ = try reader.read(at: 0, count: 100_000)
            source.close()
            return (first, try reader.open().get(), try reader.readToEnd(from: 100_000).get())
        }
        #expect(second == first)
        #expect(rest == Array(blob.bytes[100_000...]))
    }

    @Test(arguments: transports)
    func emptyBlobEndsAtOnce(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 0)
        defer { blob.remove() }
        let url = try blob.url()
        let (description, read) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            return (try reader.open().get(), try reader.read(at: 0, count: 10))
        }
        #expect(description.length == 0)
        #expect(read == .end)
    }

    @Test func serverWithoutRangeSupportIsReadBySkipping() async throws {
        let blob = try ServedBlob(size: 1_000_000)
        defer { blob.remove() }
        let url = try blob.url(.noRange)
        let (description, tail, statistics) = try await blocking {
            let source = HTTPDataSource(url: url)
            defer { source.close() }
            let reader = SourceReader(source: source)
            return (try reader.open().get(), try reader.readToEnd(from: 654_321).get(), source.statistics)
        }
        #expect(description.length == 1_000_000)
        #expect(tail == Array(blob.bytes[654_321...]))
        #expect(statistics.bytesReceived >= 1_000_000, "the skipped bytes were downloaded too")
    }

    @Test func serverWithoutRangeSupportOverURLSessionFailsClearlyWhenTheBlobExceedsTheBuffer() async throws {
        let blob = try ServedBlob(size: 1_000_000)
        defer { blob.remove() }
        let url = try blob.url(.noRange)
        let result = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 128 * 1024, transport: .urlSession))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd()
        }
        guard case .failure(.sourceFailed(_, let reason)) = result else {
            Issue.record("expected a clear failure, got \(result)")
            return
        }
        #expect(reason.contains("ignores Range"))
    }

    @Test(arguments: transports)
    func chunkedResponseOfUnknownLengthIsReadToItsEnd(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 700_001)
        defer { blob.remove() }
        let url = try blob.url(.chunked)
        let (description, bytes) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1 << 20, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            return (try reader.open().get(), try reader.readToEnd().get())
        }
        #expect(description.length == nil)
        #expect(bytes == blob.bytes)
    }

    @Test(arguments: transports)
    func redirectIsFollowed(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 300_000)
        defer { blob.remove() }
        // nginx redirects /redirect-put/<rest> to /upload/<rest>, for GET too.
        let name = URL(fileURLWithPath: blob.directory).lastPathComponent + "/blob.bin"
        let uploaded = TestServers.uploadRoot + "/" + name
        try FileManager.default.createDirectory(atPath: TestServers.uploadRoot + "/" + URL(fileURLWithPath: blob.directory).lastPathComponent, withIntermediateDirectories: true)
        try Data(blob.bytes).write(to: URL(fileURLWithPath: uploaded))
        defer { TempFiles.remove(URL(fileURLWithPath: uploaded).deletingLastPathComponent().path) }
        let url = TestServers.redirectPutURL.appendingPathComponent(name)
        let bytes = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }
        #expect(bytes == blob.bytes)
    }
}
