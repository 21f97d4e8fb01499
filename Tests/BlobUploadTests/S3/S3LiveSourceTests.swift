import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Live data (``UploadSource/live(name:_:)``) into S3: read once, in order, part after part,
/// with its producer's failure kept typed.
@Suite struct S3LiveSourceTests {
    static let partSize = 5 * 1024 * 1024

    @Test func aLiveSequenceGoesUpByteIdentical() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 2 * Self.partSize + 4321
        let path = try makeRandomFile(size: size, seed: 91)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = Self.partSize
        let result = try await client.upload(.live(name: "camera", GeneratedBytes(size: size, seed: 91)), key: "live.bin", options: options)
        #expect(result.length == Int64(size))
        #expect(result.partCount == 3)
        #expect(try MotoS3.sha256(bucket: bucket, key: "live.bin") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func aThrowingProducerFailsTheUploadWithItsError() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        var chunks = GeneratedBytes(size: 3 * Self.partSize, seed: 92)
        chunks.failAt = Self.partSize + 1000
        var options = S3UploadOptions()
        options.partSize = Self.partSize
        await #expect(throws: S3Error.transfer(.producerFailed(
            source: "camera", offset: Int64(Self.partSize + 1000), error: ProducerError(ProducerBroke())))) {
            _ = try await client.upload(.live(name: "camera", chunks), key: "broken.bin", options: options)
        }
    }
}
