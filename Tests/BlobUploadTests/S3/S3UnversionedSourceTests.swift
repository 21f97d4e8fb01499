import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A source that names no version (an HTTP server that sends neither `ETag` nor
/// `Last-Modified`) cannot show that streams opened apart read one version: its parts are read
/// by one stream, in order, never by a stream each, which would stitch two versions of a blob
/// rewritten mid-upload into one object reported as stored.
@Suite struct S3UnversionedSourceTests {
    static let length = 11 << 20

    final class Count: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int { lock.withLock { value += 1; return value - 1 } }
    }

    @Test func aSourceWithoutAVersionIsReadByOneStream() async throws {
        let count = Count()
        // The blob is all "A" for the first request and all "B" after: rewritten in place.
        let server = try ScriptedHTTPServer { request in
            let byte = count.next() == 0 ? UInt8(ascii: "A") : UInt8(ascii: "B")
            let first = request.fields["range"].flatMap { Int($0.dropFirst("bytes=".count).prefix { $0 != "-" }) } ?? 0
            let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(first)-\(Self.length - 1)/\(Self.length)\r\n"
                + "Content-Length: \(Self.length - first)\r\nConnection: close\r\n\r\n"
            return Array(head.utf8) + [UInt8](repeating: byte, count: Self.length - first)
        }
        defer { server.stop() }
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        var options = S3UploadOptions()
        options.partSize = 5 << 20
        options.parallelParts = 3
        let source = try UploadSource.url(URL(string: "http://127.0.0.1:\(server.port)/blob")!)
        _ = try await client.upload(source, key: "k", options: options)
        let stored = try MotoS3.sha256(bucket: bucket, key: "k")
        #expect(stored == (try TempFiles.sha256(of: [UInt8](repeating: UInt8(ascii: "A"), count: Self.length))), "the object mixes versions")
        #expect(server.parsedRequests.count == 1, "\(server.parsedRequests.map(\.fields))")
    }
}
