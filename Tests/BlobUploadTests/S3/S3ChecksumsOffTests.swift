import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// `sendsChecksums = false` (`s3 cp --checksum none`), for S3-compatible servers that reject
/// `x-amz-checksum-*` fields: no request carries one, every body carries its `Content-MD5`
/// instead, and the object is still whole.
@Suite struct S3ChecksumsOffTests {
    @Test(arguments: [100_000, 2 * 5 * 1024 * 1024 + 3])
    func noRequestCarriesAChecksumFieldAndEveryBodyItsMD5(size: Int) async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let proxy = try RecordingProxy()
        let client = try S3Client(configuration: S3Configuration(endpoint: proxy.endpoint, bucket: bucket, credentials: MotoS3.credentials))
        let path = try makeRandomFile(size: size, seed: 66)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        options.sendsChecksums = false
        let result = try await client.upload(.file(path: path), key: "off", options: options)
        let requests = try await proxy.finished()
        #expect(!requests.isEmpty)
        for request in requests {
            let named = request.fields.keys.filter { $0.lowercased().hasPrefix("x-amz-checksum") }
            #expect(named.isEmpty, "\(request.method) \(request.target) carries \(named)")
        }
        // PutObject, or each UploadPart: the body's own MD5, which the server can verify.
        let bodies = requests.filter { $0.method == "PUT" }
        #expect(bodies.count == (size > options.partSize ? 3 : 1), "\(requests.map { "\($0.method) \($0.target)" })")
        for request in bodies {
            #expect(request.fields["content-md5"] == request.checksums["md5"], "\(request.target)")
        }
        #expect(!result.checksumVerifiedByServer)
        #expect(result.checksum == nil, "no checksum was sent or asked for")
        #expect(try MotoS3.sha256(bucket: bucket, key: "off") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func aFullObjectChecksumNeedsChecksumsSent() async throws {
        let client = try S3Client(configuration: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:1")!, bucket: "bucket", credentials: MotoS3.credentials))
        var options = S3UploadOptions()
        options.sendsChecksums = false
        options.fullObjectChecksum = true
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(.file(path: "/etc/hostname"), key: "k", options: options)
        }
        guard case .invalidConfiguration("fullObjectChecksum", _)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
    }
}
