import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// The checksum fields the client sends, recorded on the wire and compared with checksums that
/// Python computes from the recorded bodies (moto accepts any value, so only this can tell).
@Suite struct S3ChecksumWireTests {
    @Test(arguments: S3ChecksumAlgorithm.allCases)
    func everyPartCarriesTheChecksumOfItsBytesAndCompleteListsThem(algorithm: S3ChecksumAlgorithm) async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let proxy = try RecordingProxy()
        let client = try S3Client(configuration: S3Configuration(endpoint: proxy.endpoint, bucket: bucket, credentials: MotoS3.credentials))
        let size = 5 * 1024 * 1024 + 4321
        let path = try makeRandomFile(size: size, seed: 21)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        options.checksum = algorithm
        let result = try await client.upload(.file(path: path), key: "sum-\(algorithm)", options: options)
        let requests = try await proxy.finished()

        let create = try #require(requests.first { $0.method == "POST" && $0.target.hasSuffix("?uploads=") })
        #expect(create.fields["x-amz-checksum-algorithm"] == algorithm.s3Name)
        let parts = requests.filter { $0.method == "PUT" && $0.target.contains("partNumber=") }
        #expect(parts.map(\.bodyLength).sorted() == [4321, 5 * 1024 * 1024])
        for part in parts {
            let sent = try #require(part.fields[algorithm.headerName], "\(part.target)")
            #expect(sent == part.checksums[algorithm.rawValue], "\(part.target)")
            // Only the chosen algorithm is computed and sent.
            #expect(part.fields.keys.filter { $0.hasPrefix("x-amz-checksum-") } == [algorithm.headerName])
            // A SHA-256 part is also signed with its payload hash; others go as UNSIGNED-PAYLOAD.
            let payload = part.fields["x-amz-content-sha256"]
            if algorithm == .sha256 {
                #expect(payload.flatMap { Data(hex: $0)?.base64EncodedString() } == part.checksums["sha256"])
            } else {
                #expect(payload == "UNSIGNED-PAYLOAD")
            }
        }
        let complete = try #require(requests.first { $0.method == "POST" && $0.target.contains("uploadId=") })
        let listed = try #require(complete.text)
        for part in parts {
            #expect(listed.contains("<Checksum\(algorithm.s3Name)>\(part.fields[algorithm.headerName] ?? "-")</Checksum\(algorithm.s3Name)>"))
        }
        #expect(complete.fields["x-amz-content-sha256"].flatMap { Data(hex: $0)?.base64EncodedString() } == complete.checksums["sha256"])
        #expect(try MotoS3.sha256(bucket: bucket, key: result.key) == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func aSinglePutCarriesItsChecksum() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let proxy = try RecordingProxy()
        let client = try S3Client(configuration: S3Configuration(endpoint: proxy.endpoint, bucket: bucket, credentials: MotoS3.credentials))
        let path = try makeRandomFile(size: 70_000, seed: 22)
        defer { TempFiles.remove(path) }
        let result = try await client.upload(.file(path: path), key: "single")
        let requests = try await proxy.finished()
        let put = try #require(requests.first { $0.method == "PUT" })
        #expect(put.fields["x-amz-checksum-crc32c"] == put.checksums["crc32c"])
        #expect(result.checksum == put.checksums["crc32c"])
    }
}

extension Data {
    /// Bytes from hex digits, or `nil`.
    init?(hex: String) {
        var bytes: [UInt8] = []
        var iterator = hex.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let byte = UInt8(String([high, low]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(bytes)
    }
}
