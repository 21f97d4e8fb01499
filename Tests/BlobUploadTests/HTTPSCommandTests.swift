import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The command line over `https:` against nginx's TLS servers (test CA): `--cacert FILE` on
/// every command that makes requests, and `SSL_CERT_FILE` when it is not given; the system's
/// store, which does not hold the test CA, refuses them.
@Suite struct HTTPSCommandTests {
    static func blobstream(_ arguments: [String], environment: [String: String] = [:]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(try ToolProcess.blobstream(), arguments, environment: environment)
    }

    @Test func checksumAndCatReadAnHTTPSURLWithCacertOrSSLCertFile() async throws {
        try TestServers.requireTLS()
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "https-cli")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        // Letters, so `cat`'s output can be compared as text.
        let bytes = TempFiles.pseudoRandomBytes(count: 2_000_003, seed: 301).map { 65 + $0 % 26 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let url = try TestServers.nginxTLSURL(forFileAtPath: path).absoluteString
        let reference = try TempFiles.sha256(ofFileAtPath: path)
        let withOption = try await Self.blobstream(["checksum", "--cacert", TestServers.tlsCAPath, url])
        #expect(withOption.status == 0, "\(withOption.standardError)")
        #expect(withOption.standardOutput == "\(reference)  \(url)\n")
        let withVariable = try await Self.blobstream(["checksum", url], environment: ["SSL_CERT_FILE": TestServers.tlsCAPath])
        #expect(withVariable.standardOutput == withOption.standardOutput, "\(withVariable.standardError)")
        let cat = try await Self.blobstream(["cat", "--cacert", TestServers.tlsCAPath, "--range", "1000000-1000009", url])
        #expect(cat.status == 0, "\(cat.standardError)")
        #expect(Array(cat.standardOutput.utf8) == Array(bytes[1_000_000...1_000_009]))
        let untrusted = try await Self.blobstream(["checksum", url], environment: ["SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"])
        #expect(untrusted.status == 1)
        #expect(untrusted.standardOutput.isEmpty)
        #expect(untrusted.standardError.contains("unable to get local issuer certificate"), "\(untrusted.standardError)")
        // A variable naming nothing is said to, not passed over into "unable to get local issuer".
        // (The other variable is emptied: a machine's environment may set it.)
        for (name, value, other) in [("SSL_CERT_FILE", "/nonexistent/ca.pem", "SSL_CERT_DIR"), ("SSL_CERT_DIR", "/nonexistent:/missing", "SSL_CERT_FILE")] {
            let missing = try await Self.blobstream(["checksum", url], environment: [name: value, other: ""])
            #expect(missing.status == 1)
            #expect(missing.standardError.contains("\(name) names /nonexistent"), "\(missing.standardError)")
        }
        // So is a file with no certificate in it (empty, or anything else).
        let empty = path + ".empty.pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: empty))
        defer { TempFiles.remove(empty) }
        let noCertificate = try await Self.blobstream(["checksum", url], environment: ["SSL_CERT_FILE": empty, "SSL_CERT_DIR": ""])
        #expect(noCertificate.status == 1)
        #expect(noCertificate.standardError.contains("SSL_CERT_FILE names \(empty), but it holds no PEM certificate"),
                "\(noCertificate.standardError)")
        // One readable store among those named is enough, as it is for OpenSSL.
        let oneOfTwo = try await Self.blobstream(
            ["checksum", url], environment: ["SSL_CERT_FILE": TestServers.tlsCAPath, "SSL_CERT_DIR": "/nonexistent"])
        #expect(oneOfTwo.standardOutput == withOption.standardOutput, "\(oneOfTwo.standardError)")
    }

    @Test func putAndUploadSendOverTLS() async throws {
        try TestServers.requireTLS()
        try TestServers.requireTus()
        let path = try makeRandomFile(size: 1_500_001, seed: 302)
        defer { TempFiles.remove(path) }
        let name = "cli-tls-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let put = try await Self.blobstream(["put", "--cacert", TestServers.tlsCAPath, path, TestServers.uploadTLSURL.absoluteString + name])
        #expect(put.status == 0, "\(put.standardError)")
        #expect(try TempFiles.sha256(ofFileAtPath: TestServers.uploadRoot + "/" + name) == TempFiles.sha256(ofFileAtPath: path))
        let upload = try await Self.blobstream(["upload", "--cacert", TestServers.tlsCAPath, path, TestServers.tusTLSFilesURL.absoluteString])
        #expect(upload.status == 0, "\(upload.standardError)")
        let uploadURL = try #require(URL(string: upload.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
            .split(separator: "\n").last.map(String.init) ?? ""))
        defer { TestServers.removeUploads([uploadURL]) }
        #expect(uploadURL.absoluteString.hasPrefix(TestServers.tusTLSFilesURL.absoluteString), "\(upload.standardOutput)")
        #expect(try tusStoredCopyMatches(uploadURL, file: path))
        let refused = try await Self.blobstream(["put", "--cacert", TestServers.tlsCAPath, path, TestServers.UntrustedTLSPeer.expired.url.absoluteString + "upload/" + name])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("certificate has expired"), "\(refused.standardError)")
    }

    @Test func s3CopyOverTLS() async throws {
        try TestServers.requireTLS()
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 9 * 1024 * 1024 + 3, seed: 303)
        defer { TempFiles.remove(path) }
        let result = try await Self.blobstream(
            ["s3", "cp", "--cacert", TestServers.tlsCAPath, "--endpoint", TestServers.motoTLSURL.absoluteString,
             "--part-size", "5MiB", path, "s3://\(bucket)/cli/tls.bin"],
            environment: S3CommandTests.environment)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "cli/tls.bin") == TempFiles.sha256(ofFileAtPath: path))
    }
}
