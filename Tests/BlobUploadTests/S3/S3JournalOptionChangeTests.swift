import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A run again with other options than the upload it would continue was made with:
/// - another checksum type. A multipart upload has one from its creation (composite, or
///   full-object), and its Complete must name it: resuming it with the other failed at the end
///   of every run, after every part was read again. The journal's upload of another type is
///   started over; an upload given by id whose listing names another type is refused before a
///   part is sent.
/// - a part size that makes the object one `PutObject`.
@Suite struct S3JournalOptionChangeTests {
    @Test func aJournaledUploadOfAnotherChecksumTypeIsStartedOver() async throws {
        let scratch = try await CancelledJournaledUpload(size: 12 << 20, seed: 2303, key: "typed.bin")
        defer { scratch.remove() }
        let (client, bucket, path, composite) = (scratch.client, scratch.bucket, scratch.path, scratch.uploadID)

        var fullObject = scratch.options
        fullObject.fullObjectChecksum = true
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "typed.bin", options: fullObject) { log.append($0) }
        #expect(result.uploadID != composite)
        #expect(log.all.contains { event in
            if case .journal(.startingOver(composite, let reason)) = event { reason.contains("COMPOSITE") } else { false }
        }, "\(log.all)")
        #expect(try MotoS3.sha256(bucket: bucket, key: "typed.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty, "the composite upload was aborted")
    }

    @Test func anUploadListedWithAnotherChecksumTypeIsRefused() async throws {
        let listing = S3ErrorTests.answer("200 OK", body: "<ListPartsResult><UploadId>UP-1</UploadId><ChecksumAlgorithm>CRC32C</ChecksumAlgorithm>"
            + "<ChecksumType>COMPOSITE</ChecksumType><IsTruncated>false</IsTruncated></ListPartsResult>")
        let server = try ScriptedHTTPServer(connections: [[listing]])
        defer { server.stop() }
        var options = S3ErrorTests.multipart
        options.checksum = .crc32c
        options.fullObjectChecksum = true
        let error = await #expect(throws: S3Error.self) {
            _ = try await S3ErrorTests.client(server).upload(S3ErrorTests.source(), key: "k", options: options, resuming: "UP-1")
        }
        guard case .invalidConfiguration("fullObjectChecksum", let reason)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(reason.contains("COMPOSITE") && reason.contains("without --full-object"), "\(reason)")
        #expect(server.requests.count == 1, "nothing but the listing was sent")
    }

    /// A run that stores the object with one `PutObject` (its part size now at least the
    /// object's length) leaves no multipart upload of the journal behind: the journal's upload
    /// of that source and key is aborted and its entry removed, and the run says so. It used to
    /// stay on the server, billed, with nothing to finish or abort it.
    @Test func aSinglePutAbortsTheJournalsMultipartUpload() async throws {
        let scratch = try await CancelledJournaledUpload(size: 7 << 20, seed: 2302, key: "whole.bin")
        defer { scratch.remove() }
        let (client, bucket, path, id) = (scratch.client, scratch.bucket, scratch.path, scratch.uploadID)
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [id])

        var second = scratch.options
        second.partSize = 8 << 20
        let log = EventLog<S3UploadEvent>()
        _ = try await client.upload(.file(path: path), key: "whole.bin", options: second) { log.append($0) }
        #expect(try MotoS3.sha256(bucket: bucket, key: "whole.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty, "the journal's multipart upload was aborted")
        #expect(log.all.contains { event in
            if case .journal(.startingOver(id, let reason)) = event { reason.contains("one PutObject") && reason.contains("aborted") } else { false }
        }, "\(log.all)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: scratch.directory)) ?? []).filter { $0.hasSuffix(".json") }.isEmpty)
    }
}
