import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Full-object checksums (`x-amz-checksum-type: FULL_OBJECT`): declared on
/// CreateMultipartUpload, every part with its own CRC, and CompleteMultipartUpload naming the
/// CRC of the whole object, which `awscrt` computes here from the file itself.
@Suite struct S3FullObjectChecksumTests {
    /// awscrt's CRC of the whole file at argv[2], base64 of its big-endian bytes.
    static func awscrt(_ algorithm: S3ChecksumAlgorithm, ofFileAtPath path: String) throws -> String {
        let script = """
            import base64, sys
            from awscrt import checksums
            crc = getattr(checksums, sys.argv[1])(open(sys.argv[2], 'rb').read())
            print(base64.b64encode(crc.to_bytes(8 if sys.argv[1] == 'crc64nvme' else 4, 'big')).decode())
            """
        let output = try PythonTool.run(["-c", script, algorithm.rawValue, path])
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(arguments: [S3ChecksumAlgorithm.crc64nvme, .crc32, .crc32c])
    func completeCarriesTheCRCOfTheWholeObject(algorithm: S3ChecksumAlgorithm) async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let proxy = try RecordingProxy()
        let client = try S3Client(configuration: S3Configuration(endpoint: proxy.endpoint, bucket: bucket, credentials: MotoS3.credentials))
        let size = 2 * 5 * 1024 * 1024 + 1234
        let path = try makeRandomFile(size: size, seed: 64)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        options.checksum = algorithm
        // CRC-64/NVME implies it; the 32-bit CRCs ask.
        options.fullObjectChecksum = algorithm != .crc64nvme
        let result = try await client.upload(.file(path: path), key: "full-\(algorithm)", options: options)
        let requests = try await proxy.finished()
        let whole = try Self.awscrt(algorithm, ofFileAtPath: path)

        let create = try #require(requests.first { $0.method == "POST" && $0.target.hasSuffix("?uploads=") })
        #expect(create.fields["x-amz-checksum-algorithm"] == algorithm.s3Name)
        #expect(create.fields["x-amz-checksum-type"] == "FULL_OBJECT")
        let parts = requests.filter { $0.method == "PUT" && $0.target.contains("partNumber=") }
        #expect(parts.count == 3)
        for part in parts {
            #expect(part.fields[algorithm.headerName] == part.checksums[algorithm.rawValue], "\(part.target)")
        }
        let complete = try #require(requests.first { $0.method == "POST" && $0.target.contains("uploadId=") })
        #expect(complete.fields["x-amz-checksum-type"] == "FULL_OBJECT")
        #expect(complete.fields[algorithm.headerName] == whole, "the combined CRC of the parts is the CRC of the file")
        #expect(result.checksum == whole)
        #expect(!result.checksumVerifiedByServer, "moto names no checksum back")
        #expect(try MotoS3.sha256(bucket: bucket, key: result.key) == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func compositeStaysTheDefaultForCRC32C() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let proxy = try RecordingProxy()
        let client = try S3Client(configuration: S3Configuration(endpoint: proxy.endpoint, bucket: bucket, credentials: MotoS3.credentials))
        let path = try makeRandomFile(size: 5 * 1024 * 1024 + 10, seed: 65)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        _ = try await client.upload(.file(path: path), key: "composite", options: options)
        let requests = try await proxy.finished()
        let posts = requests.filter { $0.method == "POST" }
        #expect(posts.count == 2)
        for post in posts {
            #expect(post.fields["x-amz-checksum-type"] == nil)
            #expect(post.fields["x-amz-checksum-crc32c"] == nil)
        }
    }

    /// The object checksum a Complete answer names must be the one the parts make (awscrt's
    /// CRC-64/NVME of the scripted source's 1,000 bytes of 7 is `IFr9QlAX2sk=`).
    @Test func aCompleteAnswerNamingAnotherObjectChecksumIsRefused() async throws {
        func completed(_ checksum: String) -> String {
            S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag>\"ffff-1\"</ETag>"
                + "<ChecksumCRC64NVME>\(checksum)</ChecksumCRC64NVME></CompleteMultipartUploadResult>")
        }
        var options = S3ErrorTests.multipart
        options.checksum = .crc64nvme
        let good = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [completed("IFr9QlAX2sk=")]])
        let result = try await S3ErrorTests.client(good).upload(S3ErrorTests.source(), key: "k", options: options)
        #expect(result.checksum == "IFr9QlAX2sk=")
        #expect(result.checksumVerifiedByServer, "the server named the same whole-object CRC")
        #expect(good.requests.last?.lowercased().contains("x-amz-checksum-crc64nvme: ifr9qlax2sk=") == true)

        let bad = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [completed("AAAAAAAAAAA=")]])
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(bad).upload(S3ErrorTests.source(), key: "k", options: options)
        }
        guard case .protocolViolation(_, _, "CompleteMultipartUpload", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("AAAAAAAAAAA=") && reason.contains("IFr9QlAX2sk="), "\(reason)")
        #expect(reason.contains("upload ") && reason.contains("the object may exist"), "\(reason)")

        // A server that names a composite value (or none) has verified nothing of the whole object.
        let composite = try ScriptedHTTPServer(connections: [[S3ErrorTests.created], [S3ErrorTests.partStored], [completed("IFr9QlAX2sk=-1")]])
        let unverified = try await S3ErrorTests.client(composite).upload(S3ErrorTests.source(), key: "k", options: options)
        #expect(!unverified.checksumVerifiedByServer)
    }

    /// A hash does not combine: the upload is refused before any request.
    @Test func aHashCannotBeAFullObjectChecksum() async throws {
        let server = try ScriptedHTTPServer(connections: [])
        let client = try S3ErrorTests.client(server)
        var options = S3ErrorTests.multipart
        options.checksum = .sha256
        options.fullObjectChecksum = true
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(), key: "k", options: options)
        }
        guard case .invalidConfiguration("fullObjectChecksum", _)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(server.requests.isEmpty)
    }
}
