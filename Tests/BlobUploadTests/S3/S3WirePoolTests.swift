import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import HTTP1
import Testing

/// The wire's pool of kept-alive connections.
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
}
