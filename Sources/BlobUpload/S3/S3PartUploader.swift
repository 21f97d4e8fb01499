import BlobStream
import Foundation
internal import SystemCalls

/// A part on the server, ready for `CompleteMultipartUpload`.
struct S3CompletedPart: Sendable {
    var number: Int
    var eTag: String
    var checksum: String?
    var size: Int
}

/// Reads and sends the parts of one multipart upload on up to `parallelParts` worker threads,
/// each with one part buffer of its own (memory: at most the budget of parts in flight × part
/// size, nothing else grows with the blob; a resumed upload with larger parts runs fewer). A part the server already has (resume) is read and checked against it, and
/// sent only when it differs. A transient failure is retried for its part alone while the other
/// workers go on; the first lasting failure stops every worker.
final class S3PartUploader: @unchecked Sendable {
    private let wire: S3Wire
    private let key: String
    private let uploadID: String
    private let reader: S3PartReader
    /// The parts of a blob of known length; `nil` for a stream read until it ends.
    private let plan: [S3PartPlan]?
    private let partSize: Int
    /// The bytes that all part buffers together may take (see ``workerCount(partCount:bufferSize:memoryBudget:parallelParts:)``).
    private let memoryBudget: Int
    private let options: S3UploadOptions
    private let listed: [Int: S3Answers.ListedPart]
    /// The parts a journal recorded as confirmed, and the journal that records them.
    private let journaled: [Int: UploadJournalPart]
    private let journal: UploadJournalSession?
    private let cancellation: S3Cancellation
    private let events: S3EventSink
    private let retry: S3Retry

    // Guarded by `lock`.
    private let lock = NSLock()
    private var next = 0
    private var completed: [S3CompletedPart] = []
    private var completedBytes: Int64 = 0
    /// The body bytes written of each part in flight, by part number: with `completedBytes`,
    /// what ``S3UploadEvent/sent(sentBytes:totalBytes:)`` reports.
    private var inFlight: [Int: Int64] = [:]
    private var failure: S3Error?
    /// A worker's interruption (`cancelled`), kept apart: it is the upload's error only when no
    /// real one arrives, since a worker stopped by another's failure must not hide that failure.
    private var interruption: S3Error?
    private(set) var partsKept = 0
    private(set) var bytesKept: Int64 = 0

    init(
        wire: S3Wire, key: String, uploadID: String, reader: S3PartReader, plan: [S3PartPlan]?, partSize: Int, memoryBudget: Int,
        options: S3UploadOptions, listed: [Int: S3Answers.ListedPart], journaled: [Int: UploadJournalPart] = [:],
        journal: UploadJournalSession? = nil, cancellation: S3Cancellation, events: S3EventSink
    ) {
        self.wire = wire
        self.key = key
        self.uploadID = uploadID
        self.reader = reader
        self.plan = plan
        self.partSize = partSize
        self.memoryBudget = memoryBudget
        self.options = options
        self.listed = listed
        self.journaled = journaled
        self.journal = journal
        self.cancellation = cancellation
        self.events = events
        retry = S3Retry(options: options, bucket: wire.bucket, cancellation: cancellation, events: events)
    }

    /// Uploads every part that the server does not have as the source has it; returns all
    /// parts in order.
    func run() throws(S3Error) -> [S3CompletedPart] {
        let bufferSize = plan.map { $0.map(\.size).max() ?? 0 } ?? partSize
        let workers = Self.workerCount(
            partCount: plan?.count, bufferSize: bufferSize, memoryBudget: memoryBudget, parallelParts: options.parallelParts)
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            WorkerThreads.shared.start("BlobUpload S3 part") { [self] in
                defer { group.leave() }
                work(bufferSize: bufferSize)
            }
        }
        group.wait()
        if let failure = failure ?? interruption { throw failure }
        if cancellation.isCancelled { throw .cancelled(uploadID: uploadID) }
        return completed.sorted { $0.number < $1.number }
    }

    /// How many workers, each with a part buffer of `bufferSize` bytes, run side by side: at
    /// most `parallelParts`, and no more than `memoryBudget` holds (a resumed upload's parts
    /// may be larger than the options' own; ``S3UploadRun`` refuses parts larger than the budget).
    static func workerCount(partCount: Int?, bufferSize: Int, memoryBudget: Int, parallelParts: Int) -> Int {
        max(1, min(parallelParts, partCount ?? parallelParts, memoryBudget / max(bufferSize, 1)))
    }

    private func work(bufferSize: Int) {
        // malloc reports a failure instead of trapping.
        guard let memory = malloc(max(bufferSize, 1)) else {
            fail(.invalidConfiguration(name: "partSize", reason: "a part buffer of \(bufferSize) bytes cannot be allocated"))
            return
        }
        defer { free(memory) }
        let buffer = UnsafeMutableRawBufferPointer(start: memory, count: bufferSize)
        do throws(S3Error) {
            while let (part, digests) = try nextPart(into: buffer) {
                try handle(part, digests: digests, buffer: buffer)
            }
        } catch {
            fail(error)
        }
    }

    /// The next part, read into `buffer`, or `nil` when there is none (or the upload stops).
    private func nextPart(into buffer: UnsafeMutableRawBufferPointer) throws(S3Error) -> (S3PartPlan, S3PartDigests)? {
        guard let plan else {
            guard lock.withLock({ failure == nil }), !cancellation.isCancelled else { return nil }
            return try reader.readNext(
                partSize: partSize, into: buffer, algorithm: options.checksum, withMD5: { self.options.sendsContentMD5 || self.listed[$0] != nil },
                cancellation: cancellation)
        }
        let taken = lock.withLock { () -> S3PartPlan? in
            guard failure == nil, !cancellation.isCancelled, next < plan.count else { return nil }
            defer { next += 1 }
            return plan[next]
        }
        guard let part = taken else { return nil }
        let digests = try reader.read(
            part, into: buffer, algorithm: options.checksum, withMD5: options.sendsContentMD5 || onServer(part) != nil, cancellation: cancellation)
        return (part, digests)
    }

    /// The server's copy of `part` when it has one of the same size.
    private func onServer(_ part: S3PartPlan) -> S3Answers.ListedPart? {
        listed[part.number].flatMap { $0.size == Int64(part.size) ? $0 : nil }
    }

    /// Records a worker's error and stops the others at once. The first real error wins over
    /// any interruption, whichever arrives first.
    private func fail(_ error: S3Error) {
        lock.withLock {
            if Self.isInterruption(error) {
                if interruption == nil { interruption = error }
            } else if failure == nil {
                failure = error
            }
        }
        cancellation.cancel()
    }

    /// Whether `error` only says that a worker was stopped (by the caller, or because another
    /// worker failed), rather than why the upload failed.
    static func isInterruption(_ error: S3Error) -> Bool {
        if case .cancelled = error { return true }
        if case .transfer(.cancelled) = error { return true }
        return false
    }

    private func handle(_ part: S3PartPlan, digests: S3PartDigests, buffer: UnsafeMutableRawBufferPointer) throws(S3Error) {
        let onServer = onServer(part)
        let checksum = digests.checksum.base64
        if let onServer, Self.matches(onServer, digests: digests, journaled: journaled[part.number]) {
            record(S3CompletedPart(number: part.number, eTag: onServer.eTag, checksum: checksum, size: part.size), kept: true)
            return
        }
        let body = UnsafeRawBufferPointer(rebasing: buffer[0..<part.size])
        let eTag = try retry.run(key: key, uploadID: uploadID, partNumber: part.number) { () throws(S3Error) -> String in
            try send(part, body: body, digests: digests)
        }
        record(S3CompletedPart(number: part.number, eTag: eTag, checksum: checksum, size: part.size), kept: false)
        events.send(.partUploaded(partNumber: part.number, bytes: part.size))
    }

    /// Whether the server's copy of a part is the source's: everything the server lists must
    /// match — its checksum when it lists one, and its ETag when that is an MD5 (unencrypted
    /// and SSE-S3 parts), since a 32-bit CRC alone is the weaker of the two. A part a journal
    /// recorded as confirmed must also be listed with the ETag it was confirmed with, and have
    /// the checksum recorded then; that record, of the source version the journal pinned,
    /// vouches for the part whatever its ETag is (SSE-KMS and SSE-C ETags are 32 hex digits
    /// that are no MD5 of the bytes). Any other part is sent again.
    static func matches(_ listed: S3Answers.ListedPart, digests: S3PartDigests, journaled: UploadJournalPart? = nil) -> Bool {
        if let checksum = listed.checksum, checksum != digests.checksum.base64 { return false }
        if let journaled {
            guard journaled.eTag == listed.eTag, Int64(journaled.size) == listed.size,
                  journaled.checksum.map({ $0 == digests.checksum.base64 }) ?? true else { return false }
            // The very part this journal saw confirmed, of these bytes' checksum.
            if journaled.checksum != nil { return true }
        }
        guard let tagged = ChecksumDigest(algorithm: .md5, hex: listed.eTag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
            return listed.checksum != nil || journaled?.checksum != nil
        }
        guard let md5 = digests.md5 else { return false }
        return tagged.bytes == md5.bytes
    }

    private func send(_ part: S3PartPlan, body: UnsafeRawBufferPointer, digests: S3PartDigests) throws(S3Error) -> String {
        let call = S3Call(
            operation: "UploadPart", method: "PUT", key: key,
            query: [("partNumber", String(part.number)), ("uploadId", uploadID)],
            fields: options.integrityFields(digests), uploadID: uploadID, partNumber: part.number)
        let payloadHash = options.checksum == .sha256 ? digests.checksum.hex : SigV4Signer.unsignedPayload
        // A part sent again counts from its first byte again.
        wrote(0, of: part.number, restarting: true)
        let answer = try wire.send(call, body: body, payloadHash: payloadHash, cancellation: cancellation) { [self] sent in
            wrote(Int64(sent), of: part.number, restarting: false)
        }
        guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
        return try S3Client.acknowledged(answer, call: call, bucket: wire.bucket, checksum: options.checksum, sent: digests.checksum.base64)
    }

    /// `sent` body bytes of part `number` were written in its current attempt (or, `restarting`,
    /// it starts again from its first byte): reports the bytes sent of parts confirmed and in flight.
    private func wrote(_ sent: Int64, of number: Int, restarting: Bool) {
        lock.withLock {
            inFlight[number] = restarting ? 0 : sent
            guard !restarting else { return }
            events.send(.sent(sentBytes: completedBytes + inFlight.values.reduce(0, +), totalBytes: reader.length))
        }
    }

    private func record(_ part: S3CompletedPart, kept: Bool) {
        let confirmed = UploadJournalPart(number: part.number, size: part.size, eTag: part.eTag, checksum: part.checksum)
        if journaled[part.number] != confirmed { journal?.confirm(confirmed) }
        // Under the lock, so that progress reaches the handler in increasing order.
        lock.withLock {
            completed.append(part)
            completedBytes += Int64(part.size)
            inFlight[part.number] = nil
            if kept {
                partsKept += 1
                bytesKept += Int64(part.size)
            }
            events.send(.progress(completedBytes: completedBytes, totalBytes: reader.length))
        }
    }
}
