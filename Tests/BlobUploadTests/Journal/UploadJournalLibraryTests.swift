import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import SystemCalls
import Testing

/// The journal through the library: an app's own journal (the protocol) continues a cancelled
/// tus upload, and S3 parts are judged against what the journal recorded of them.
@Suite struct UploadJournalLibraryTests {
    /// A journal an app keeps in memory.
    final class MemoryJournal: UploadJournal {
        let entries = LockedValue<[UploadJournalKey: UploadJournalEntry]>([:])
        func entry(for key: UploadJournalKey) throws(UploadJournalError) -> UploadJournalEntry? { entries.withLock { $0[key] } }
        func record(_ entry: UploadJournalEntry) throws(UploadJournalError) { entries.withLock { $0[entry.key] = entry } }
        func remove(_ key: UploadJournalKey) throws(UploadJournalError) { _ = entries.withLock { $0.removeValue(forKey: key) } }
    }

    @Test func anAppsJournalContinuesACancelledTusUpload() async throws {
        try TestServers.requireTus()
        let chunk = 256 << 10
        let path = try makeRandomFile(size: 8 * chunk + 5, seed: 2231)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let journal = MemoryJournal()
        var options = TusUploadOptions()
        options.chunkSize = chunk
        options.journal = journal
        let first = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(first.createdURLs) }
        var cancelling = options
        // Cancelled as the fourth chunk is about to go.
        cancelling.chunkBodyHook = { offset, body in
            if offset == Int64(3 * chunk) { withUnsafeCurrentTask { $0?.cancel() } }
            return body
        }
        let settings = cancelling
        // On a task of its own, which the hook cancels.
        let cancelled = Task { try await client.upload(.file(path: path), options: settings) { first.append($0) } }
        await #expect(throws: BlobUploadError.cancelled) { try await cancelled.value }
        let url = try #require(first.createdURLs.first)
        let entry = try #require(journal.entries.withLock { $0.values.first })
        #expect(entry.upload == .tus(uploadURL: url))
        #expect(entry.key.source == path && entry.key.destination == TestServers.tusFilesURL.absoluteString)
        #expect(entry.length == Int64(8 * chunk + 5))

        let second = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), options: options) { second.append($0) }
        #expect(result.uploadURL == url)
        #expect(result.startOffset >= Int64(3 * chunk))
        #expect(second.createdURLs.isEmpty)
        #expect(second.all.contains(.journal(.resuming(upload: url.absoluteString, offset: result.startOffset))))
        #expect(try tusStoredCopyMatches(url, file: path))
        #expect(journal.entries.withLock { $0.isEmpty })
    }

    /// A part the journal recorded must be listed with the ETag it was confirmed with and have
    /// the recorded checksum; that record alone vouches for a part listed with neither checksum
    /// nor MD5 ETag (SSE-KMS), which is otherwise sent again.
    @Test func aListedPartIsJudgedAgainstItsJournalRecord() {
        let bytes = Data("part".utf8)
        var crc = S3ChecksumAlgorithm.crc32c.algorithm.makeChecksum()
        bytes.withUnsafeBytes { crc.update($0) }
        let digests = S3PartDigests(checksum: crc.finalize(), md5: nil)
        let checksum = digests.checksum.base64
        let listed = S3Answers.ListedPart(number: 1, size: 4, eTag: "\"kms-tag\"", checksum: nil)
        #expect(!S3PartUploader.matches(listed, digests: digests))
        let recorded = UploadJournalPart(number: 1, size: 4, eTag: "\"kms-tag\"", checksum: checksum)
        #expect(S3PartUploader.matches(listed, digests: digests, journaled: recorded))
        var otherTag = recorded
        otherTag.eTag = "\"kms-other\""
        #expect(!S3PartUploader.matches(listed, digests: digests, journaled: otherTag))
        var otherChecksum = recorded
        otherChecksum.checksum = "AAAAAA=="
        #expect(!S3PartUploader.matches(listed, digests: digests, journaled: otherChecksum))
        var otherSize = recorded
        otherSize.size = 5
        #expect(!S3PartUploader.matches(listed, digests: digests, journaled: otherSize))
        // A listed checksum still has to match, whatever the journal says.
        let listedOther = S3Answers.ListedPart(number: 1, size: 4, eTag: "\"kms-tag\"", checksum: "AAAAAA==")
        #expect(!S3PartUploader.matches(listedOther, digests: digests, journaled: recorded))
    }

    /// SSE-KMS and SSE-C ETags are 32 hex digits too, but no MD5 of the part: a part the journal
    /// recorded (that ETag, this checksum) is kept although its ETag is not the bytes' MD5; it
    /// used to be sent again, so resuming kept nothing on such buckets. Without the record, an
    /// ETag that reads as an MD5 must be the bytes' MD5.
    @Test func aRecordedPartWithAnEncryptedETagIsKept() {
        let bytes = Data("part".utf8)
        var crc = S3ChecksumAlgorithm.crc32c.algorithm.makeChecksum()
        bytes.withUnsafeBytes { crc.update($0) }
        let md5 = MD5.digest(of: bytes)
        let digests = S3PartDigests(checksum: crc.finalize(), md5: md5)
        let encrypted = "\"" + MD5.digest(of: Data("kms".utf8) + bytes).hex + "\""
        let listed = S3Answers.ListedPart(number: 1, size: 4, eTag: encrypted, checksum: digests.checksum.base64)
        #expect(!S3PartUploader.matches(listed, digests: digests), "an ETag that reads as an MD5 and is not the bytes' one")
        let recorded = UploadJournalPart(number: 1, size: 4, eTag: encrypted, checksum: digests.checksum.base64)
        #expect(S3PartUploader.matches(listed, digests: digests, journaled: recorded))
        var unchecked = recorded
        unchecked.checksum = nil
        #expect(!S3PartUploader.matches(listed, digests: digests, journaled: unchecked), "a record without a checksum vouches for nothing")
        let plain = S3Answers.ListedPart(number: 1, size: 4, eTag: "\"" + md5.hex + "\"", checksum: nil)
        #expect(S3PartUploader.matches(plain, digests: digests))
    }
}
