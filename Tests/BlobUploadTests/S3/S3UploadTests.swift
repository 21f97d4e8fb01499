import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Uploads to the real moto server, each checked by downloading the object with boto3 and
/// comparing SHA-256 with the source.
@Suite struct S3UploadTests {
    static let mebibyte = 1024 * 1024

    @Test func multipartUploadWithParallelPartsIsByteIdentical() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 3 * 5 * Self.mebibyte + 12_345
        let path = try makeRandomFile(size: size, seed: 14)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * Self.mebibyte
        options.parallelParts = 3
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "dir/ünï cødé+key.bin", options: options) { log.append($0) }
        #expect(result.partCount == 4)
        #expect(result.partsSent == 4)
        #expect(result.length == Int64(size))
        #expect(result.eTag.hasSuffix("-4\""))
        let uploadID = try #require(result.uploadID)
        // The upload id is announced before any part is sent.
        #expect(log.all.first == .created(uploadID: uploadID))
        let progress = log.all.compactMap { if case .progress(let done, _) = $0 { done } else { nil } }
        #expect(progress == progress.sorted())
        #expect(progress.last == Int64(size))
        #expect(try MotoS3.sha256(bucket: bucket, key: "dir/ünï cødé+key.bin") == TempFiles.sha256(ofFileAtPath: path))
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty)
    }

    @Test func aSmallBlobGoesUpInOnePut() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 100_000, seed: 2)
        defer { TempFiles.remove(path) }
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(.file(path: path), key: "small") { log.append($0) }
        #expect(result.uploadID == nil)
        #expect(result.partCount == 1)
        #expect(!log.all.contains { if case .created = $0 { true } else { false } })
        #expect(try MotoS3.sha256(bucket: bucket, key: "small") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func anEmptyBlobIsAnEmptyObject() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let path = try makeRandomFile(size: 0)
        defer { TempFiles.remove(path) }
        _ = try await client.upload(.file(path: path), key: "empty")
        #expect(try MotoS3.length(bucket: bucket, key: "empty") == 0)
    }

    @Test func aOnePassStreamIsReadInOrderOnePartBufferAtATime() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 2 * 5 * Self.mebibyte + 777
        let path = try makeRandomFile(size: size, seed: 3)
        defer { TempFiles.remove(path) }
        let opened = Locked(0)
        let source = UploadSource.streams(name: path, length: Int64(size)) {
            opened.mutate { $0 += 1 }
            return InputStream(fileAtPath: path)!
        }
        var options = S3UploadOptions()
        options.partSize = 5 * Self.mebibyte
        let result = try await client.upload(source, key: "stream", options: options)
        #expect(result.partCount == 3)
        // One stream for the whole blob (plus the probe that tells it cannot start elsewhere).
        #expect(opened.value <= 2)
        #expect(try MotoS3.sha256(bucket: bucket, key: "stream") == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test(arguments: [2 * 5 * 1024 * 1024 + 3, 2 * 5 * 1024 * 1024, 0])
    func aStreamOfUnknownLengthIsReadUntilItEnds(size: Int) async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let bytes = TempFiles.pseudoRandomBytes(count: size, seed: 5)
        let made = Locked(0)
        let source = UploadSource.dataSource(name: "pipe-like") {
            made.mutate { $0 += 1 }
            return ScriptedDataSource(bytes: bytes, hidesLength: true)
        }
        var options = S3UploadOptions()
        options.partSize = 5 * Self.mebibyte
        let log = EventLog<S3UploadEvent>()
        let result = try await client.upload(source, key: "unknown-\(size)", options: options) { log.append($0) }
        // Parts of exactly the part size end where the stream does: no empty part after them.
        #expect(result.partCount == max(1, (size + 5 * Self.mebibyte - 1) / (5 * Self.mebibyte)))
        #expect(result.length == Int64(size))
        #expect(made.value == 1)   // one stream, read once
        #expect(log.all.contains(.progress(completedBytes: Int64(size), totalBytes: nil)))
        #expect(try MotoS3.length(bucket: bucket, key: "unknown-\(size)") == Int64(size))
        if size > 0 {
            #expect(try MotoS3.sha256(bucket: bucket, key: "unknown-\(size)") == TempFiles.sha256(of: bytes))
        }
    }

    @Test func abortDeletesTheUploadAndResumingItThenSaysItIsGone() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let size = 5 * Self.mebibyte + 10
        let path = try makeRandomFile(size: size, seed: 4)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = 5 * Self.mebibyte
        options.parallelParts = 1
        let created = Locked<String?>(nil)
        let cancel = Locked<(@Sendable () -> Void)?>(nil)
        let settings = options
        // Cancel as soon as the upload exists, before any part is sent: it stays on the
        // server, resumable.
        let task = Task {
            while cancel.value == nil { try await Task.sleep(nanoseconds: 1_000_000) }
            return try await client.upload(.file(path: path), key: "aborted", options: settings) { event in
                if case .created(let id) = event {
                    created.value = id
                    cancel.value?()
                }
            }
        }
        cancel.value = { task.cancel() }
        let outcome = await task.result
        let uploadID = try #require(created.value)
        #expect(throws: S3Error.cancelled(uploadID: uploadID)) { try outcome.get() }
        #expect(try MotoS3.uploadIDs(bucket: bucket) == [uploadID])
        try await client.abort(key: "aborted", uploadID: uploadID)
        #expect(try MotoS3.uploadIDs(bucket: bucket).isEmpty)
        await #expect(throws: S3Error.uploadGone(bucket: bucket, key: "aborted", uploadID: uploadID)) {
            _ = try await client.upload(.file(path: path), key: "aborted", options: options, resuming: uploadID)
        }
    }
}

/// A blob served over HTTP (nginx) as the source: each part is its own ranged read.
@Suite struct S3HTTPSourceTests {
    @Test func anHTTPBlobIsUploadedWithOneRangedStreamPerPart() async throws {
        try TestServers.requireNginx()
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "s3-source")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 2 * 5 * 1024 * 1024 + 5, seed: 51)
        var options = S3UploadOptions()
        options.partSize = 5 * 1024 * 1024
        let result = try await client.upload(.url(try TestServers.nginxURL(forFileAtPath: path)), key: "from-http", options: options)
        #expect(result.partCount == 3)
        #expect(try MotoS3.sha256(bucket: bucket, key: "from-http") == TempFiles.sha256(ofFileAtPath: path))
    }
}
