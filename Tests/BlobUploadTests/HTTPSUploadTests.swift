import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Every upload client over `https:` on the package's own HTTP/1.1 client, against nginx with
/// certificates from the test CA in front of the real servers: tus (tuspyserver), the streamed
/// PUT (nginx) and S3 (moto), byte-identical; and an untrusted server refused before a byte of
/// the request is sent.
@Suite struct HTTPSUploadTests {
    static let trust = TLSTrust.certificateAuthorities(file: TestServers.tlsCAPath)
    static let transport = Transport.automatic.trusting(trust)

    @Test func tusUploadsOverTLSByteIdentical() async throws {
        try TestServers.requireTLS()
        try TestServers.requireTus()
        let size = 3 * 1024 * 1024 + 77
        let path = try makeRandomFile(size: size, seed: 201)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusTLSFilesURL, transport: Self.transport)
        var options = TusUploadOptions()
        options.chunkSize = 1024 * 1024
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        #expect(result.uploadURL.scheme == "https")
        #expect(result.bytesSent == Int64(size))
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    @Test func streamedPutOverTLSByteIdentical() async throws {
        try TestServers.requireTLS()
        let size = 2 * 1024 * 1024 + 5
        let path = try makeRandomFile(size: size, seed: 202)
        defer { TempFiles.remove(path) }
        let name = "put-tls-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let response = try await StreamedUploader(transport: Self.transport).upload(
            BlobInputStream(fileAtPath: path), to: TestServers.uploadTLSURL.appendingPathComponent(name), expectedLength: Int64(size))
        #expect((200..<300).contains(response.statusCode))
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func s3MultipartOverTLSByteIdentical() async throws {
        try TestServers.requireTLS()
        let (client, bucket) = try MotoS3.makeBucket(endpoint: TestServers.motoTLSURL, trust: Self.trust)
        defer { MotoS3.removeBucket(bucket) }
        let size = 2 * 5 * 1024 * 1024 + 999
        let path = try makeRandomFile(size: size, seed: 203)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        let result = try await client.upload(.file(path: path), key: "tls/object.bin", options: options)
        #expect(result.partCount == 3)
        #expect(try MotoS3.sha256(bucket: bucket, key: "tls/object.bin") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// Virtual-host addressing over TLS: the request goes to the bucket's own host name
    /// (`bucket.s3.localhost`, which the client resolves to the loopback as RFC 6761 asks), is
    /// verified against the wildcard certificate `*.s3.localhost`, and is signed for that host.
    @Test func s3VirtualHostBucketOverTLSByteIdentical() async throws {
        try TestServers.requireTLS()
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let endpoint = URL(string: "https://s3.localhost:\(TestServers.motoTLSPort)")!
        let client = try S3Client(configuration: S3Configuration(
            endpoint: endpoint, bucket: bucket, addressing: .virtualHost, credentials: MotoS3.credentials, trust: Self.trust))
        let size = 5 * 1024 * 1024 + 321
        let path = try makeRandomFile(size: size, seed: 205)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        let result = try await client.upload(.file(path: path), key: "virtual/host.bin", options: options)
        #expect(result.partCount == 2)
        #expect(try MotoS3.sha256(bucket: bucket, key: "virtual/host.bin") == TempFiles.sha256(ofFileAtPath: path))
        // The certificate names *.s3.localhost, not s3.localhost's other subdomains' parents:
        // a bucket whose name has a dot is not covered by the wildcard, and is refused.
        let dotted = try S3Client(configuration: S3Configuration(
            endpoint: endpoint, bucket: "a.\(bucket)", addressing: .virtualHost, credentials: MotoS3.credentials, trust: Self.trust))
        await #expect {
            _ = try await dotted.upload(.file(path: path), key: "never.bin", options: options)
        } throws: { error in
            "\(error)".contains("hostname mismatch") || "\(error)".contains("host name")
        }
    }

    @Test func anUntrustedServerGetsNoRequest() async throws {
        try TestServers.requireTLS()
        let path = try makeRandomFile(size: 1000, seed: 204)
        defer { TempFiles.remove(path) }
        let target = TestServers.UntrustedTLSPeer.expired.url.appendingPathComponent("upload/never-\(UUID().uuidString).bin")
        do {
            _ = try await StreamedUploader(transport: Self.transport).upload(BlobInputStream(fileAtPath: path), to: target, expectedLength: 1000)
            Issue.record("an expired certificate was accepted")
        } catch {
            #expect(error.description.contains("certificate has expired"), "\(error)")
            #expect(error.description.contains(target.absoluteString), "\(error)")
        }
        let tus = TusClient(endpoint: TestServers.UntrustedTLSPeer.selfSigned.url.appendingPathComponent("files/"), transport: Self.transport)
        do {
            _ = try await tus.upload(.file(path: path))
            Issue.record("a self-signed certificate was accepted")
        } catch {
            #expect(error.description.contains("self-signed certificate"), "\(error)")
        }
        let s3 = try S3Client(configuration: S3Configuration(
            endpoint: TestServers.UntrustedTLSPeer.wrongName.url, bucket: "never-created", credentials: MotoS3.credentials, trust: Self.trust))
        do {
            _ = try await s3.upload(.file(path: path), key: "k")
            Issue.record("a certificate for another name was accepted")
        } catch {
            #expect(error.description.contains("IP address mismatch"), "\(error)")
            if case .retriesExhausted = error { Issue.record("a refused certificate was asked again: \(error)") }
        }
    }
}
