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
        let partSize = 8 << 20
        let scratch = try await CancelledJournaledUpload(size: 2 * partSize + (6 << 20), seed: 2241, key: "sized.bin", partSize: partSize)
        defer { scratch.remove() }
        let (client, bucket, path, id, options) = (scratch.client, scratch.bucket, scratch.path, scratch.uploadID, scratch.options)

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
    /// journal's records of the parts confirmed before, which vouch for a part whose ETag is no
    /// MD5 (SSE-KMS): the records were dropped, and such a part was sent again.
    @Test func resumingTheJournalsUploadByIdKeepsItsPartRecords() async throws {
        let partSize = 5 << 20
        let data = Data((0..<(partSize + 1000)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let first = data.prefix(partSize)
        var crc = S3ChecksumAlgorithm.crc32c.algorithm.makeChecksum()
        first.withUnsafeBytes { crc.update($0) }
        let checksum = crc.finalize().base64
        // An encrypted part's ETag: 32 hex digits, not the MD5 of its bytes.
        let eTag = "\"" + MD5.digest(of: Data("kms".utf8) + first).hex + "\""
        let listing = S3ErrorTests.answer("200 OK", body: "<ListPartsResult><UploadId>UP-1</UploadId><IsTruncated>false</IsTruncated>"
            + "<Part><PartNumber>1</PartNumber><Size>\(partSize)</Size><ETag>\(eTag)</ETag><ChecksumCRC32C>\(checksum)</ChecksumCRC32C></Part>"
            + "</ListPartsResult>")
        let completed = S3ErrorTests.answer("200 OK", body: "<CompleteMultipartUploadResult><ETag>\"ffff-2\"</ETag></CompleteMultipartUploadResult>")
        let server = try ScriptedHTTPServer(connections: [[listing], [S3ErrorTests.partStored], [completed]])
        defer { server.stop() }
        let client = try S3ErrorTests.client(server)
        let directory = try TempFiles.makeDirectory(prefix: "journal-resume-id")
        defer { TempFiles.remove(directory) }
        let journal = FileUploadJournal(directory: directory)
        try journal.record(UploadJournalEntry(
            key: UploadJournalKey(sourceName: "scripted", destination: "s3://scripted-bucket/k at \(client.wire.origin)"),
            sourceVersion: "sha256:" + SHA256.digest(of: data).hex, length: Int64(data.count),
            upload: .s3(upload: UploadJournalS3Upload(
                uploadID: "UP-1", partSize: partSize, checksumAlgorithm: "CRC32C",
                parts: [UploadJournalPart(number: 1, size: partSize, eTag: eTag, checksum: checksum)]))))
        var options = S3ErrorTests.multipart
        options.partSize = partSize
        options.parallelParts = 1
        options.journal = journal
        let source = UploadSource.dataSource(name: "scripted", length: Int64(data.count)) { MemoryDataSource(data: data, name: "scripted") }
        let log = EventLog<S3UploadEvent>()
        _ = try await client.upload(source, key: "k", options: options, resuming: "UP-1") { log.append($0) }
        #expect(log.all.contains(.resumed(uploadID: "UP-1", partsKept: 1, bytesKept: Int64(partSize))), "\(log.all)")
        #expect(server.requests.filter { $0.contains("partNumber=1&") || $0.contains("partNumber=1 ") }.isEmpty, "part 1 was sent again")
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
