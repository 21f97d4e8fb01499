import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import HTTP1
import Testing

/// The wire's pool of kept-alive connections, and cancellation before any request.
@Suite struct S3WirePoolTests {
    /// A connection cancelled by another upload's cancellation (after it was put back) is
    /// never used again: the request goes out on a new one.
    @Test func aCancelledConnectionInThePoolIsNotUsed() throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.answer("200 OK", fields: ["ETag: \"e\""])]])
        let wire = try S3Wire(configuration: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(server.port)")!, bucket: "scripted-bucket",
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "s")))
        let cancelled = HTTP1Connection()
        cancelled.cancel()
        wire.returnToPool(cancelled)
        let call = S3Call(operation: "HeadObject", method: "HEAD", key: "k")
        let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: S3Cancellation())
        #expect(answer.statusCode == 200)
    }

    /// Cancelling while the source's first stream is still opening (to learn its length)
    /// stops the upload too, before anything is sent.
    @Test func cancellingWhileTheSourceOpensStopsTheUpload() async throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created]])
        let client = try S3ErrorTests.client(server)
        let opens = Locked(0)
        let source = UploadSource.dataSource(name: "never-opens", length: 1000) {
            opens.update { $0 += 1 }
            let source = ScriptedDataSource(bytes: [UInt8](repeating: 1, count: 1000))
            source.openBehaviour = .never
            return source
        }
        let upload = Task { try await client.upload(source, key: "k", options: S3ErrorTests.multipart) }
        while opens.update({ $0 }) == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        upload.cancel()
        let result = await upload.result
        #expect(throws: S3Error.cancelled(uploadID: nil)) { try result.get() }
        #expect(server.requests.isEmpty)
    }
}
