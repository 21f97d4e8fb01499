import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A run that stores the object with one `PutObject` (its part size now at least the object's
/// length) leaves no multipart upload of the journal behind: the journal's upload of that
/// source and key is aborted and its entry removed, and the run says so. It used to stay on
/// the server, billed, with nothing to finish or abort it.
@Suite struct S3JournalSinglePutTests {
    @Test func aSinglePutAbortsTheJournalsMultipartUpload() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 7 << 20
        let path = try makeRandomFile(size: size, seed: 2302)
        let directory = try TempFiles.makeDirectory(prefix: "journal-single-put")
        defer { TempFiles.remove(path); TempFiles.remove(directory) }
        var options = S3UploadOptions()
        options.partSize = 5 << 20
        options.parallelParts = 1
        options.journal = FileUploadJournal(directory: directory)
        let id = try await client.uploadCancelled(afterPart: 1, path: path, key: "whole.bin", options: options)
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [id])

        var second = options
        second.partSize = 8 << 20
        let log = EventLog<S3UploadEvent>()
        _ = try await client.upload(.file(path: path), key: "whole.bin", options: second) { log.append($0) }
        #expect(try MotoS3.sha256(bucket: bucket, key: "whole.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty, "the journal's multipart upload was aborted")
        #expect(log.all.contains { event in
            if case .journal(.startingOver(id, let reason)) = event { reason.contains("one PutObject") && reason.contains("aborted") } else { false }
        }, "\(log.all)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.isEmpty)
    }
}
