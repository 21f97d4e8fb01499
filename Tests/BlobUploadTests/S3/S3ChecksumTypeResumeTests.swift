import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A multipart upload has one checksum type from its creation (composite, or full-object), and
/// its Complete must name that type: resuming it with the other one failed at the end of every
/// run, after every part was read again. The journal's upload of another type is started over;
/// an upload given by id whose listing names another type is refused before a part is sent.
@Suite struct S3ChecksumTypeResumeTests {
    @Test func aJournaledUploadOfAnotherChecksumTypeIsStartedOver() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 12 << 20
        let path = try makeRandomFile(size: size, seed: 2303)
        let directory = try TempFiles.makeDirectory(prefix: "journal-checksum-type")
        defer { TempFiles.remove(path); TempFiles.remove(directory) }
        var options = S3UploadOptions()
        options.partSize = 5 << 20
        options.parallelParts = 1
        options.checksum = .crc32c
        options.journal = FileUploadJournal(directory: directory)
        let composite = try await client.uploadCancelled(afterPart: 1, path: path, key: "typed.bin", options: options)

        var fullObject = options
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
}
