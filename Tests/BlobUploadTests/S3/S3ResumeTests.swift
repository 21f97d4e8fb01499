import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Resuming multipart uploads: after a SIGKILL of the command line, and after the source
/// changed under parts the server already has.
@Suite struct S3ResumeTests {
    static let partSize = 5 * 1024 * 1024

    @Test func aClientKilledHalfwayResumesAndSendsOnlyTheMissingParts() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let partCount = 6
        let path = try makeRandomFile(size: partCount * Self.partSize - 1000, seed: 31)
        defer { TempFiles.remove(path) }
        // The proxy holds every byte past four and a half parts, so the upload stops in the
        // middle however slowly the machine polls the server (no race with its end), and two
        // parts sent side by side still leave at least three whole ones on the server.
        let proxy = try RecordingProxy(holdingAfter: 9 * Self.partSize / 2)
        let child = try ToolProcess.startBlobstream([
            "s3", "cp", "--endpoint", proxy.endpoint.absoluteString, "--part-size", "5M", "--parallel", "2",
            path, "s3://\(bucket)/killed.bin",
        ], environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
        // The upload id is printed first, before any part goes out.
        let printedID = await offThePool { child.firstLine(timeout: 60) }
        var listed: [S3ListedPart] = []
        let deadline = Date(timeIntervalSinceNow: 60)
        while let id = printedID, Date() < deadline {
            listed = try await client.listParts(key: "killed.bin", uploadID: id)
            if listed.count >= partCount / 2 { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        kill(child.processIdentifier, SIGKILL)
        let ended = await child.finished()
        #expect(ended.signal == SIGKILL, "status \(ended.status): \(ended.standardError)")
        // Cut the held connections, so the server's list is final.
        _ = try await proxy.finished()
        let id = try #require(printedID, "status \(ended.status): \(ended.standardError)")
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [id])

        let before = try await client.listParts(key: "killed.bin", uploadID: id)
        try #require(before.count >= partCount / 2 && before.count < partCount,
                     "the kill did not land in the middle: \(before.count) of \(partCount) parts")
        var options = S3UploadOptions()
        options.partSize = Self.partSize
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "killed.bin", options: options, resuming: id) { log.append($0) }
        let sent = log.all.compactMap { if case .partUploaded(let number, _) = $0 { number } else { nil } }
        let missing = Set(1...partCount).subtracting(before.map(\.number))
        // Every missing part is sent, and at most the parts that were in flight at the kill
        // besides (2 in parallel): one the dead client had half sent may still have reached
        // the server afterwards, cut short, and is then sent again because it differs.
        #expect(missing.isSubset(of: Set(sent)), "sent \(sent), missing \(missing.sorted())")
        #expect(sent.count == Set(sent).count)
        #expect(sent.count <= missing.count + 2, "sent \(sent), missing \(missing.sorted())")
        #expect(result.partsSent == sent.count)
        let kept = before.filter { !sent.contains($0.number) }
        #expect(log.all.contains(.resumed(uploadID: id, partsKept: kept.count, bytesKept: kept.map(\.size).reduce(0, +))))
        #expect(try MotoS3.sha256(bucket: bucket, key: "killed.bin") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func aPartWhoseBytesChangedIsSentAgainAndTheOthersAreKept() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 3 * Self.partSize, seed: 32)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = Self.partSize
        options.parallelParts = 1
        let id = try await client.uploadCancelled(afterPart: 2, path: path, key: "changed.bin", options: options)
        #expect(try await client.listParts(key: "changed.bin", uploadID: id).map(\.number) == [1, 2])

        // The same length, other bytes in part 1: its ETag (MD5) no longer matches.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data(repeating: 0xAB, count: 64))
        try handle.close()

        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "changed.bin", options: options, resuming: id) { log.append($0) }
        let sent = log.all.compactMap { if case .partUploaded(let number, _) = $0 { number } else { nil } }
        #expect(sent.sorted() == [1, 3])
        #expect(result.partsSent == 2)
        #expect(log.all.contains(.resumed(uploadID: id, partsKept: 1, bytesKept: Int64(Self.partSize))))
        #expect(try MotoS3.sha256(bucket: bucket, key: "changed.bin") == TempFiles.sha256(ofFileAtPath: path))
    }

    /// Resuming adopts the upload's own part size, but never more part buffers than the
    /// options' memory budget (parts in flight × part size) holds.
    @Test func adoptedLargerPartsRunFewerWorkersWithinTheMemoryBudget() {
        let budget = 4 * Self.partSize
        #expect(S3PartUploader.workerCount(partCount: 3, bufferSize: 16 << 20, memoryBudget: budget, parallelParts: 4) == 1)
        #expect(S3PartUploader.workerCount(partCount: 9, bufferSize: 10 << 20, memoryBudget: budget, parallelParts: 4) == 2)
        #expect(S3PartUploader.workerCount(partCount: 9, bufferSize: Self.partSize, memoryBudget: budget, parallelParts: 4) == 4)
        #expect(S3PartUploader.workerCount(partCount: 2, bufferSize: Self.partSize, memoryBudget: budget, parallelParts: 4) == 2)
    }

    /// A server listing parts larger than the whole budget (a hostile 5 GiB part) is refused
    /// with the size it names, before any buffer is allocated or anything sent.
    @Test func aListedPartLargerThanTheMemoryBudgetIsRefused() async throws {
        let listing = S3ErrorTests.answer("200 OK", body: """
            <ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber><Size>5368709120</Size>\
            <ETag>"0123456789abcdef0123456789abcdef"</ETag></Part></ListPartsResult>
            """)
        let server = try ScriptedHTTPServer(connections: [[listing]])
        let client = try S3ErrorTests.client(server)
        var options = S3ErrorTests.multipart
        options.partSize = Self.partSize
        options.parallelParts = 1
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(Self.partSize + 1000), key: "k", options: options, resuming: "UP-1")
        }
        guard case .invalidConfiguration("partSize", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("5368709120"), "\(reason)")
        #expect(server.requests.count == 1)
    }

    /// An upload created with another checksum algorithm cannot take parts of this one:
    /// resuming it is refused, naming the upload's algorithm, before any part is sent.
    @Test func resumingWithAnotherChecksumAlgorithmIsRefusedNamingTheUploads() async throws {
        let listing = S3ErrorTests.answer("200 OK", body: """
            <ListPartsResult><ChecksumAlgorithm>SHA256</ChecksumAlgorithm><IsTruncated>false</IsTruncated></ListPartsResult>
            """)
        let server = try ScriptedHTTPServer(connections: [[listing]])
        let client = try S3ErrorTests.client(server)
        let error = await #expect(throws: S3Error.self) {
            _ = try await client.upload(S3ErrorTests.source(), key: "k", options: S3ErrorTests.multipart, resuming: "UP-1")
        }
        guard case .invalidConfiguration("checksum", let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("SHA256"), "\(reason)")
        #expect(server.requests.count == 1)
    }

    /// A part list whose markers go back (2, then 1: endless pages) is a protocol violation.
    @Test func aPartListWhoseMarkerGoesBackIsRefused() async throws {
        func page(_ marker: Int) -> String {
            S3ErrorTests.answer("200 OK", body: "<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>\(marker)</NextPartNumberMarker></ListPartsResult>")
        }
        let server = try ScriptedHTTPServer(connections: [[page(2)], [page(1)]])
        let client = try S3ErrorTests.client(server)
        await #expect(throws: S3Error.protocolViolation(
            bucket: "scripted-bucket", key: "k", operation: "ListParts",
            reason: "a truncated list whose NextPartNumberMarker 1 does not follow 2")) {
            _ = try await client.listParts(key: "k", uploadID: "UP-1")
        }
    }

    /// A part on the server is kept only when everything listed for it matches: a 32-bit CRC
    /// that matches does not outweigh an MD5 ETag that does not.
    @Test func aListedPartIsKeptOnlyWhenItsChecksumAndItsMD5ETagBothMatch() throws {
        let bytes = Data("part".utf8)
        var crc = S3ChecksumAlgorithm.crc32c.algorithm.makeChecksum()
        var md5 = MD5()
        bytes.withUnsafeBytes { crc.update($0); md5.update($0) }
        let digests = S3PartDigests(checksum: crc.finalize(), md5: md5.finalize())
        let checksum = digests.checksum.base64
        let goodTag = "\"\(try #require(digests.md5).hex)\""
        let otherTag = "\"0123456789abcdef0123456789abcdef\""
        #expect(S3PartUploader.matches(S3Answers.ListedPart(number: 1, size: 4, eTag: goodTag, checksum: checksum), digests: digests))
        #expect(!S3PartUploader.matches(S3Answers.ListedPart(number: 1, size: 4, eTag: otherTag, checksum: checksum), digests: digests))
        #expect(!S3PartUploader.matches(S3Answers.ListedPart(number: 1, size: 4, eTag: goodTag, checksum: "AAAAAA=="), digests: digests))
        // An ETag that is no MD5 (SSE-KMS): the checksum alone decides.
        #expect(S3PartUploader.matches(S3Answers.ListedPart(number: 1, size: 4, eTag: "\"kms-tag\"", checksum: checksum), digests: digests))
    }
}
