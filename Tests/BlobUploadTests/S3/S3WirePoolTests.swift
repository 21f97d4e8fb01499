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

    /// CreateMultipartUpload is never sent on a kept-alive connection: one the server closed
    /// while idle would have it sent again, and an upload it created unseen would be orphaned.
    @Test func createMultipartUploadGoesOutOnANewConnection() throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created]])
        // A kept-alive connection whose server reads the next request and closes unanswered.
        let closing = try ScriptedHTTPServer(connections: [[""]])
        let wire = try S3Wire(configuration: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(server.port)")!, bucket: "scripted-bucket",
            credentials: S3Credentials(accessKeyID: "AKID", secretAccessKey: "s")))
        let pooled = HTTP1Connection()
        try pooled.connect(host: "127.0.0.1", port: Int(closing.port), wait: .after(5))
        wire.returnToPool(pooled)
        let call = S3Call(operation: "CreateMultipartUpload", method: "POST", key: "k", query: [("uploads", "")], createsResource: true)
        let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: S3Cancellation())
        #expect(answer.statusCode == 200)
        #expect(closing.requests.isEmpty)
        #expect(server.requests.count == 1)
    }

    /// Cancelling while the source's first stream is still opening (to learn its length)
    /// stops the upload too, before anything is sent.
    @Test func cancellingWhileTheSourceOpensStopsTheUpload() async throws {
        let server = try ScriptedHTTPServer(connections: [[S3ErrorTests.created]])
        let client = try S3ErrorTests.client(server)
        let opens = Locked(0)
        let source = UploadSource.dataSource(name: "never-opens", length: 1000) {
            opens.mutate { $0 += 1 }
            let source = ScriptedDataSource(bytes: [UInt8](repeating: 1, count: 1000))
            source.openBehaviour = .never
            return source
        }
        let upload = Task { try await client.upload(source, key: "k", options: S3ErrorTests.multipart) }
        while opens.value == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        upload.cancel()
        let result = await upload.result
        #expect(throws: S3Error.cancelled(uploadID: nil)) { try result.get() }
        #expect(server.requests.isEmpty)
    }
}
