import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A journaled upload is continued with the part size the journal recorded for it, not one
/// guessed from the server's part list, which can mislead: here it lists the short last part
/// and a first part replaced by a single byte, and the largest listed part is not the part size.
@Suite struct S3JournalPartSizeTests {
    @Test func aJournaledUploadKeepsItsRecordedPartSize() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let partSize = 8 << 20
        let size = 2 * partSize + (6 << 20)
        let path = try makeRandomFile(size: size, seed: 2241)
        let directory = try TempFiles.makeDirectory(prefix: "journal-part-size")
        defer { TempFiles.remove(path); TempFiles.remove(directory) }
        var options = S3UploadOptions()
        options.partSize = partSize
        options.parallelParts = 1
        options.journal = FileUploadJournal(directory: directory)
        let id = try await client.uploadCancelled(afterPart: 1, path: path, key: "sized.bin", options: options)

        // The last part (6 MiB, past two parts of 8) sent, and part 1 replaced by one byte.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try Self.uploadPart(3, of: id, bucket: bucket, bytes: bytes[(2 * partSize)...])
        try Self.uploadPart(1, of: id, bucket: bucket, bytes: bytes.prefix(1))
        #expect(try await client.listParts(key: "sized.bin", uploadID: id).map(\.size) == [1, 6 << 20])

        var second = options
        second.partSize = 5 << 20
        second.parallelParts = 2
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "sized.bin", options: second) { log.append($0) }
        #expect(result.uploadID == id, "the journaled upload was continued")
        let resumed = log.all.filter { if case .resumed = $0 { true } else { false } }
        #expect(resumed == [.resumed(uploadID: id, partsKept: 1, bytesKept: Int64(6 << 20))])
        #expect(try MotoS3.sha256(bucket: bucket, key: "sized.bin") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// Continuing the journal's upload by its id (as the command line's advice says) keeps the
    /// journal's records of the parts confirmed before, which vouch for parts whose ETags are no
    /// MD5 (SSE-KMS): the entry used to be written again with no part at all.
    @Test func resumingTheJournalsUploadByIdKeepsItsPartRecords() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let partSize = 5 << 20
        let path = try makeRandomFile(size: 3 * partSize + 1000, seed: 2304)
        let directory = try TempFiles.makeDirectory(prefix: "journal-resume-id")
        defer { TempFiles.remove(path); TempFiles.remove(directory) }
        var options = S3UploadOptions()
        options.partSize = partSize
        options.parallelParts = 1
        options.journal = FileUploadJournal(directory: directory)
        let id = try await client.uploadCancelled(afterPart: 1, path: path, key: "byid.bin", options: options)
        _ = try await client.uploadCancelled(afterPart: 2, path: path, key: "byid.bin", options: options, resuming: id)

        let key = UploadJournalKey(source: path, destination: "s3://\(bucket)/byid.bin at \(client.wire.origin)")
        let entry = try #require(try FileUploadJournal(directory: directory).entry(for: key))
        guard case .s3(let upload) = entry.upload else { Issue.record("\(entry)"); return }
        #expect(upload.uploadID == id)
        #expect(upload.parts.map(\.number) == [1, 2], "\(upload.parts)")
    }

    /// Sends `bytes` as part `number` of upload `id` of `sized.bin`, past the client.
    private static func uploadPart(_ number: Int, of id: String, bucket: String, bytes: Data) throws {
        let wire = try S3Wire(configuration: S3Configuration(endpoint: TestServers.motoURL, bucket: bucket, credentials: MotoS3.credentials))
        let call = S3Call(operation: "UploadPart", method: "PUT", key: "sized.bin",
                          query: [("partNumber", String(number)), ("uploadId", id)], uploadID: id)
        let answer = try Data(bytes).withUnsafeBytes { body in
            try wire.send(call, body: body, payloadHash: SigV4Signer.unsignedPayload, cancellation: S3Cancellation())
        }
        try #require((200..<300).contains(answer.statusCode), "UploadPart \(number): HTTP \(answer.statusCode)")
    }
}
