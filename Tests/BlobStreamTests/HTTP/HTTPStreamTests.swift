import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `BlobInputStream` over HTTP, in both modes, reached by URL through the registry.
@Suite struct HTTPStreamTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamReadsTheBlobByURL(mode: BlobInputStream.Mode) async throws {
        let blob = try ServedBlob(size: 5 * 1024 * 1024 + 3, seed: 11)
        defer { blob.remove() }
        let url = try blob.url()
        let (isHTTP, bytes, length) = try await blocking {
            let stream = try BlobInputStream.make(url: url, mode: mode)
            return (stream.dataSource is HTTPDataSource, try StreamHarness.readAll(stream, chunk: 64 * 1024), stream.length)
        }
        #expect(isHTTP)
        #expect(bytes == blob.bytes)
        #expect(length == Int64(blob.bytes.count))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamOverURLSessionReadsTheBlob(mode: BlobInputStream.Mode) async throws {
        let blob = try ServedBlob(size: 3 * 1024 * 1024, seed: 12)
        defer { blob.remove() }
        let url = try blob.url()
        let bytes = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 512 * 1024, transport: .urlSession))
            return try StreamHarness.readAll(BlobInputStream(dataSource: source, mode: mode), chunk: 10_000)
        }
        #expect(bytes == blob.bytes)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamStartsAtAnOffset(mode: BlobInputStream.Mode) async throws {
        let blob = try ServedBlob(size: 2 * 1024 * 1024, seed: 13)
        defer { blob.remove() }
        let url = try blob.url()
        let (accepted, bytes) = try await blocking {
            let stream = try BlobInputStream.make(url: url, mode: mode)
            let accepted = stream.setProperty(NSNumber(value: 1_234_567), forKey: .fileCurrentOffsetKey)
            return (accepted, try StreamHarness.readAll(stream))
        }
        #expect(accepted)
        #expect(bytes == Array(blob.bytes[1_234_567...]))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func missingBlobFailsTheStreamWith404(mode: BlobInputStream.Mode) async throws {
        try TestServers.requireNginx()
        let url = TestServers.nginxURL.appendingPathComponent("http-source-missing.bin")
        let error = try await blocking { () -> BlobStreamError? in
            do {
                _ = try StreamHarness.readAll(try BlobInputStream.make(url: url, mode: mode))
                return nil
            } catch let error as BlobStreamError {
                return error
            }
        }
        #expect(error == .httpStatus(url: url.absoluteString, statusCode: 404))
    }
}
