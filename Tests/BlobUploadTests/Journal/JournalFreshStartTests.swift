import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// An S3 upload the journal records but that a run does not continue — `--no-resume`, or
/// `--resume` with another upload id — is aborted, not left to be billed, and the run says so.
@Suite struct JournalFreshStartTests {
    @Test func noResumeAbortsTheJournaledS3Upload() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try JournalCommandTests.scratch(seed: 2231)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let target = ["--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/fresh.bin"]
        let old = try await JournalKillTests.killedUpload(["s3", "cp"] + target, state: state, killedBy: proxy)
        try #require(try MotoS3.uploadIDs(bucket: bucket) == [old])

        let fresh = try await ToolProcess.execute(
            try ToolProcess.blobstream(), ["s3", "cp", "--no-resume"] + target, environment: JournalKillTests.s3Environment(state))
        #expect(fresh.status == 0, "\(fresh.standardError)")
        #expect(fresh.standardOutput.split(separator: "\n").first.map(String.init) != old)
        #expect(fresh.standardError.contains("not resuming \(old): a new upload was asked for; it was aborted; starting a new upload"),
                "\(fresh.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "fresh.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty, "the journaled upload was left")
        #expect(JournalKillTests.entries(state).isEmpty)
    }

    @Test func resumingAnotherUploadAbortsTheJournaledOne() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try JournalCommandTests.scratch(seed: 2232)
        let other = try TempFiles.makeDirectory(prefix: "journal-state")
        defer { TempFiles.remove(path); TempFiles.remove(state); TempFiles.remove(other) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let target = ["--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/other.bin"]
        // Two killed runs with journals of their own: two uploads of one file to one key.
        var ids: [String] = []
        for journal in [state, other] {
            ids.append(try await JournalKillTests.killedUpload(["s3", "cp"] + target, state: journal, killedBy: proxy))
        }
        let (journaled, resumed) = (ids[0], ids[1])

        let run = try await ToolProcess.execute(
            try ToolProcess.blobstream(), ["s3", "cp", "--resume", resumed] + target, environment: JournalKillTests.s3Environment(state))
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.contains("not resuming \(journaled): upload \(resumed) is continued instead; it was aborted"),
                "\(run.standardError)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "other.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty, "the journaled upload was left")
    }

    /// A mistyped id fails the run before the journal's upload is touched: it stays, and a
    /// later run continues it.
    @Test func resumingAnUnknownUploadLeavesTheJournaledOne() async throws {
        let (_, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let (path, state) = try JournalCommandTests.scratch(seed: 2233)
        defer { TempFiles.remove(path); TempFiles.remove(state) }
        let proxy = try KillingProxy(protocol: "s3", targetPort: TestServers.motoPort)
        defer { _ = try? proxy.finish() }
        let target = ["--endpoint", "http://127.0.0.1:\(proxy.port)", path, "s3://\(bucket)/typo.bin"]
        let journaled = try await JournalKillTests.killedUpload(["s3", "cp"] + target, state: state, killedBy: proxy)

        let typo = try await ToolProcess.execute(
            try ToolProcess.blobstream(), ["s3", "cp", "--resume", journaled + "x"] + target,
            environment: JournalKillTests.s3Environment(state))
        #expect(typo.status != 0, "\(typo.standardError)")
        #expect(!typo.standardError.contains("not resuming"), "\(typo.standardError)")
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [journaled], "the journaled upload was aborted")

        let resumed = try await ToolProcess.execute(
            try ToolProcess.blobstream(), ["s3", "cp"] + target, environment: JournalKillTests.s3Environment(state))
        #expect(resumed.status == 0, "\(resumed.standardError)")
        #expect(resumed.standardOutput.split(separator: "\n").first.map(String.init) == journaled, "\(resumed.standardOutput)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "typo.bin") == TempFiles.sha256(ofFileAtPath: path))
    }
}
