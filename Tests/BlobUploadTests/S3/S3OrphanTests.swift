import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Abandoned multipart uploads against moto (plain and TLS): listed with their start times and
/// aborted by age, by the API and by `blobstream s3 ls-uploads` and `s3 abort --older-than`.
/// moto 5.2 answers every listing in one page and dates every upload 2010-11-10T20:48:33Z, so
/// pages and uploads of different ages are scripted in ``S3OrphanPagingTests``.
@Suite struct S3OrphanTests {
    static let environment = ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": ""]

    /// Starts a multipart upload of `key` and leaves it unfinished; returns its id.
    static func startUpload(_ client: S3Client, key: String) throws -> String {
        let call = S3Call(operation: "CreateMultipartUpload", method: "POST", key: key, query: [("uploads", "")])
        let answer = try client.wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: S3Cancellation())
        guard answer.statusCode == 200, let id = S3XMLElement.parse(answer.body)?.value("UploadId") else {
            throw TestSupportError("CreateMultipartUpload answered \(answer.statusCode)")
        }
        return id
    }

    @Test(arguments: [false, true])
    func listsEveryUploadUnderThePrefix(overTLS: Bool) async throws {
        let (client, bucket) = overTLS
            ? try MotoS3.makeBucket(endpoint: TestServers.motoTLSURL, trust: .certificateAuthorities(file: TestServers.tlsCAPath))
            : try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        var started: [String: String] = [:]
        for index in 0..<5 {
            let key = "orphans/\(index).bin"
            started[try Self.startUpload(client, key: key)] = key
        }
        _ = try Self.startUpload(client, key: "other/kept.bin")

        let listed = try await client.listUnfinishedUploads(prefix: "orphans/", pageSize: 2)

        #expect(listed.count == 5)
        #expect(Dictionary(uniqueKeysWithValues: listed.map { ($0.uploadID, $0.key) }) == started)
        #expect(try await client.listUnfinishedUploads().count == 6)
    }

    /// moto 5.2 dates every upload 2010-11-10T20:48:33Z: a cutoff after that aborts them all,
    /// one before it none. (Uploads of different ages are scripted below.)
    @Test func abortsUploadsStartedBeforeTheCutoffOnly() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let under = [try Self.startUpload(client, key: "a/one"), try Self.startUpload(client, key: "a/two")]
        let elsewhere = try Self.startUpload(client, key: "b/other")
        let moto = try #require(S3Client.parseTimestamp("2010-11-10T20:48:33.000Z"))

        let none = try await client.abortUnfinishedUploads(prefix: "a/", initiatedBefore: moto)
        #expect(none.isEmpty)
        #expect(Set(try MotoS3.uploadIDs(bucket: bucket)) == Set(under + [elsewhere]))

        let reported = EventLog<S3UnfinishedUpload>()
        let aborted = try await client.abortUnfinishedUploads(prefix: "a/", initiatedBefore: Date()) { reported.append($0) }

        #expect(Set(aborted.map(\.uploadID)) == Set(under))
        #expect(reported.all == aborted)
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [elsewhere])
    }

    @Test func theCommandsListAndAbortByAge() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let first = try Self.startUpload(client, key: "x/first.bin")
        let second = try Self.startUpload(client, key: "x/second.bin")
        let elsewhere = try Self.startUpload(client, key: "y/kept.bin")
        let endpoint = ["--endpoint", TestServers.motoURL.absoluteString]

        let listing = try ToolProcess.run(
            ToolProcess.blobstream(), ["s3", "ls-uploads"] + endpoint + ["s3://\(bucket)/x/"], environment: Self.environment)
        #expect(listing.status == 0, "\(listing.standardError)")
        let lines = listing.standardOutput.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(lines.map { $0.count } == [3, 3])
        #expect(Set(lines.map { $0[1] }) == [first, second])
        #expect(Set(lines.map { $0[2] }) == ["s3://\(bucket)/x/first.bin", "s3://\(bucket)/x/second.bin"])
        #expect(lines.allSatisfy { $0[0] == "2010-11-10T20:48:33Z" }, "moto's start time, in UTC")

        // 1000 weeks ago is before 2010: nothing is that old.
        let keep = try ToolProcess.run(
            ToolProcess.blobstream(), ["s3", "abort", "--older-than", "1000w"] + endpoint + ["s3://\(bucket)/x"],
            environment: Self.environment)
        #expect(keep.status == 0, "\(keep.standardError)")
        #expect(keep.standardOutput == "aborted 0 unfinished uploads under s3://\(bucket)/x; 2 newer kept\n")

        let abort = try ToolProcess.run(
            ToolProcess.blobstream(), ["s3", "abort", "--older-than", "7d"] + endpoint + ["s3://\(bucket)/x"],
            environment: Self.environment)
        #expect(abort.status == 0, "\(abort.standardError)")
        #expect(abort.standardOutput.contains("aborted 2010-11-10T20:48:33Z\t\(first)\ts3://\(bucket)/x/first.bin\n"))
        #expect(abort.standardOutput.contains("aborted 2010-11-10T20:48:33Z\t\(second)\ts3://\(bucket)/x/second.bin\n"))
        #expect(abort.standardOutput.hasSuffix("aborted 2 unfinished uploads under s3://\(bucket)/x; 0 newer kept\n"))
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [elsewhere])
    }

    @Test(arguments: ["7", "d", "-1d", "1.5h", "7y", "99999999999w"])
    func unusableAgesAreUsageErrors(age: String) throws {
        let result = try ToolProcess.run(
            ToolProcess.blobstream(), ["s3", "abort", "--endpoint", "http://127.0.0.1:9", "--older-than", age, "s3://bucket/p"],
            environment: Self.environment)
        #expect(result.status == 64, "\(age): \(result.standardError)")
    }
}
