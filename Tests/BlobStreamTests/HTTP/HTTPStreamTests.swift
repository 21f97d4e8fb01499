import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `BlobInputStream` over HTTP, in both modes, reached by URL through the registry.
@Suite struct HTTPStreamTests {
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamReadsTheBlobByURL(mode: BlobInputStream.Mode) throws {
        let blob = try HTTPFixture.makeBlob(size: 5 * 1024 * 1024 + 3, seed: 11)
        let stream = try BlobInputStream.make(url: HTTPFixture.url(blob.path), mode: mode)
        #expect(stream.dataSource is HTTPDataSource)
        #expect(try StreamHarness.readAll(stream, chunk: 64 * 1024) == blob.bytes)
        #expect(stream.length == Int64(blob.bytes.count))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamOverURLSessionReadsTheBlob(mode: BlobInputStream.Mode) throws {
        let blob = try HTTPFixture.makeBlob(size: 3 * 1024 * 1024, seed: 12)
        let source = HTTPDataSource(url: HTTPFixture.url(blob.path), configuration: .init(readAheadLimit: 512 * 1024, transport: .urlSession))
        let stream = BlobInputStream(dataSource: source, mode: mode)
        #expect(try StreamHarness.readAll(stream, chunk: 10_000) == blob.bytes)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func streamStartsAtAnOffset(mode: BlobInputStream.Mode) throws {
        let blob = try HTTPFixture.makeBlob(size: 2 * 1024 * 1024, seed: 13)
        let stream = try BlobInputStream.make(url: HTTPFixture.url(blob.path), mode: mode)
        #expect(stream.setProperty(NSNumber(value: 1_234_567), forKey: .fileCurrentOffsetKey))
        #expect(try StreamHarness.readAll(stream) == Array(blob.bytes[1_234_567...]))
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func missingBlobFailsTheStreamWith404(mode: BlobInputStream.Mode) throws {
        try HTTPFixture.requireNginx()
        let url = HTTPFixture.url("http-tests/missing.bin")
        let stream = try BlobInputStream.make(url: url, mode: mode)
        #expect(throws: BlobStreamError.httpStatus(url: url.absoluteString, statusCode: 404)) {
            try StreamHarness.readAll(stream)
        }
    }
}
