@testable import BlobUpload
import Foundation
import HTTP1
import Testing

/// How a blob is cut into parts, and how requests are addressed.
@Suite struct S3PlanTests {
    static let mebibyte: Int64 = 1 << 20

    @Test func partsGrowInWholeMebibytesToStayWithin10000() throws {
        let options = S3UploadOptions()
        #expect(try S3UploadRun.partSize(for: 10_000 * 8 * Self.mebibyte, source: "s", options: options) == 8 << 20)
        let large = 100 * 1024 * Self.mebibyte   // 100 GiB
        let size = try S3UploadRun.partSize(for: large, source: "s", options: options)
        #expect(size == 11 << 20)
        #expect((large + Int64(size) - 1) / Int64(size) <= 10_000)
        #expect(throws: S3Error.sourceTooLarge(source: "s", length: 10_001 * 5 * 1024 * Self.mebibyte)) {
            try S3UploadRun.partSize(for: 10_001 * 5 * 1024 * Self.mebibyte, source: "s", options: options)
        }
    }

    @Test func thePlanCoversTheBlobExactly() {
        let plan = S3UploadRun.plan(length: 2 * 5 * Self.mebibyte + 1, partSize: 5 << 20)
        #expect(plan == [S3PartPlan(number: 1, offset: 0, size: 5 << 20), S3PartPlan(number: 2, offset: 5 * Self.mebibyte, size: 5 << 20),
                         S3PartPlan(number: 3, offset: 10 * Self.mebibyte, size: 1)])
        #expect(S3UploadRun.plan(length: 0, partSize: 5 << 20) == [S3PartPlan(number: 1, offset: 0, size: 0)])
    }

    @Test func bucketsAreAddressedByPathOrByHost() throws {
        let credentials = S3Credentials(accessKeyID: "a", secretAccessKey: "s")
        let call = S3Call(operation: "PutObject", method: "PUT", key: "a b/ü", query: [("partNumber", "2"), ("uploadId", "x=y")])
        let path = try S3Wire(configuration: S3Configuration(endpoint: URL(string: "http://Host.Example:9000")!, bucket: "media", credentials: credentials))
        #expect(try path.url(for: call).absoluteString == "http://host.example:9000/media/a%20b/%C3%BC?partNumber=2&uploadId=x%3Dy")
        let host = try S3Wire(configuration: S3Configuration(endpoint: URL(string: "http://s3.example")!, bucket: "media",
                                                            addressing: .virtualHost, credentials: credentials))
        #expect(try host.url(for: call).absoluteString == "http://media.s3.example/a%20b/%C3%BC?partNumber=2&uploadId=x%3Dy")
        #expect(throws: S3Error.self) {
            try S3Wire(configuration: S3Configuration(endpoint: URL(string: "http://s3.example")!, bucket: "No_Such", credentials: credentials))
        }
        // S3's rules: lowercase letters, digits, '.' and '-', as the message says; no '_'.
        #expect(throws: S3Error.invalidConfiguration(
            name: "bucket", reason: "\"no_such\" is not an S3 bucket name (3 to 63 lowercase letters, digits, '.', '-')")) {
            try S3Wire(configuration: S3Configuration(endpoint: URL(string: "http://s3.example")!, bucket: "no_such", credentials: credentials))
        }
    }

    /// An IPv6 literal is bracketed in the URL, and the host signed is the `Host` field written.
    @Test func ipv6EndpointsAreBracketedAndSignedAsTheHostFieldIsWritten() throws {
        let credentials = S3Credentials(accessKeyID: "a", secretAccessKey: "s")
        let wire = try S3Wire(configuration: S3Configuration(endpoint: URL(string: "http://[::1]:9000")!, bucket: "media", credentials: credentials))
        let url = try wire.url(for: S3Call(operation: "PutObject", method: "PUT", key: "k"))
        #expect(url.absoluteString == "http://[::1]:9000/media/k")
        let head = String(decoding: HTTPRequestHead(method: "PUT", url: url, fields: [], contentLength: 0).serialized(), as: UTF8.self)
        #expect(head.contains("\r\nHost: \(wire.authority)\r\n"), "\(head)")
        #expect(wire.authority == "[::1]:9000")
    }
}
