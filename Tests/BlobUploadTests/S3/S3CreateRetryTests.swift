import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A `CreateMultipartUpload` whose answer is lost after moto made the upload is sent again; the
/// upload then succeeds, and the upload the first attempt left is reported, not left unsaid
/// (S3 keeps, and bills, an unfinished upload until it is aborted).
@Suite struct S3CreateRetryTests {
    @Test func aCreateSentAgainReportsTheUploadAnEarlierAttemptLeft() async throws {
        try TestServers.requireMoto()
        let proxy = try FaultProxy(targetPort: UInt16(TestServers.motoURL.port!))
        defer { proxy.stop() }
        // The first connection (the create) is reset as moto's answer begins: the upload exists.
        proxy.plan([.cut(after: 0, direction: .response)])
        let (client, bucket) = try MotoS3.makeBucket(endpoint: proxy.url(for: TestServers.motoURL))
        defer { MotoS3.removeBucket(bucket) }
        let events = EventLog<S3UploadEvent>()
        let result = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart) { events.append($0) }

        let reported = events.all.compactMap { event -> (String, [S3UnfinishedUpload]?)? in
            if case .createdAgain(let id, let others) = event { return (id, others) }
            return nil
        }
        try #require(reported.count == 1, "\(events.all)")
        let (id, others) = reported[0]
        #expect(id == result.uploadID)
        let left = try MotoS3.uploadIDs(bucket: bucket)
        #expect(left.count == 1, "the first attempt's upload is still there: \(left)")
        #expect(others?.map(\.uploadID) == left)
        #expect(others?.allSatisfy { $0.key == "k" } == true)
    }

    @Test func aCreateAnsweredAtOnceReportsNothing() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let events = EventLog<S3UploadEvent>()
        _ = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart) { events.append($0) }
        #expect(!events.all.contains { if case .createdAgain = $0 { true } else { false } })
    }
}
