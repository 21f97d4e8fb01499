import BlobStream
import Foundation
internal import SystemCalls

/// One call of ``S3Client/upload(_:key:options:resuming:events:)``, on its own thread: picks
/// single `PutObject` or multipart, creates or resumes the upload, has the parts sent, and
/// completes it.
struct S3UploadRun {
    let wire: S3Wire
    let key: String
    let options: S3UploadOptions
    let cancellation: S3Cancellation
    let events: S3EventSink

    private var retry: S3Retry { S3Retry(options: options, bucket: wire.bucket, cancellation: cancellation, events: events) }

    func run(_ source: UploadSource, resuming resumedID: String?) throws(S3Error) -> S3UploadResult {
        try validate()
        let reader = try S3PartReader(source: source, cancellation: cancellation)
        // Of unknown length (a pipe), the part size cannot grow: such a blob is at most 10,000 parts.
        var partSize = try Self.partSize(for: reader.length ?? 0, source: source.name, options: options)
        let threshold = options.singlePutThreshold ?? partSize
        // The parts in flight, each of the size chosen here, bound the memory; a resumed
        // upload's own part size must fit within it too.
        let memoryBudget = options.parallelParts * partSize
        if resumedID == nil, let length = reader.length, length <= Int64(threshold) {
            // A multipart upload the journal has of this source is continued by nothing now.
            abandonJournaled(source: source, reader: reader, reason: "the object goes in one PutObject this time (it fits in one part)")
            return try putObject(reader, length: length)
        }
        let journal = openJournal(source: source, reader: reader)
        let (resumed, journaled) = try resumption(of: resumedID, journal: journal, reader: reader)
        let uploadID: String
        var listed: [Int: S3Answers.ListedPart] = [:]
        if let (resumedID, listing, journaledPartSize) = resumed {
            uploadID = resumedID
            // Its parts carry the algorithm the upload was created with; S3 refuses others.
            if let algorithm = listing.algorithm, !options.sendsChecksums || algorithm.uppercased() != options.checksum.s3Name {
                throw .invalidConfiguration(
                    name: "checksum",
                    reason: "upload \(uploadID) was created with \(algorithm) checksums, not \(options.checksum.s3Name); resume it with that checksum")
            }
            // And with one checksum type, which its Complete must name: another fails every time.
            if let type = listing.checksumType, let wanted = checksumType, type != wanted {
                throw .invalidConfiguration(
                    name: "fullObjectChecksum",
                    reason: "upload \(uploadID) was created with \(type) checksums, not \(wanted); resume it "
                        + (type == "FULL_OBJECT" ? "with a full-object checksum (--full-object)" : "without --full-object"))
            }
            for part in listing.parts { listed[part.number] = part }
            // Parts are numbered by the part size the upload started with: keep it — as the
            // journal recorded it, else as the largest listed part shows it (which a listing of
            // the short last part alone understates; such a part then fails its check and is
            // sent again).
            if let size = journaledPartSize.map(Int64.init) ?? listed.values.map(\.size).max(),
               size >= Int64(S3UploadOptions.minimumPartSize),
               size <= Int64(S3UploadOptions.maximumPartSize),
               (reader.length.map { ($0 + size - 1) / size } ?? 0) <= Int64(S3UploadOptions.maximumPartCount) {
                partSize = Int(size)
            }
            // Its largest part buffer: one such part must fit within the memory budget.
            let largest = Int(min(Int64(partSize), reader.length ?? Int64(partSize)))
            if largest > memoryBudget {
                throw .invalidConfiguration(
                    name: "partSize",
                    reason: "upload \(uploadID) has parts of \(partSize) bytes on the server, more than parallelParts × partSize "
                        + "(\(options.parallelParts) × \(options.partSize) bytes) allows in memory; resume it with a partSize of "
                        + "at least \(partSize) bytes")
            }
        } else {
            let (created, attempts) = try create()
            uploadID = created
            events.send(.created(uploadID: uploadID))
            if attempts > 1 { reportOtherUploads(than: uploadID) }
        }
        journal?.start(.s3(upload: UploadJournalS3Upload(
            uploadID: uploadID, partSize: partSize, checksumAlgorithm: journaledAlgorithm, checksumType: checksumType,
            parts: journaled.values.sorted { $0.number < $1.number })))
        do {
            let plan = reader.length.map { Self.plan(length: $0, partSize: partSize) }
            let uploader = S3PartUploader(
                wire: wire, key: key, uploadID: uploadID, reader: reader, plan: plan, partSize: partSize, memoryBudget: memoryBudget,
                options: options,
                listed: listed, journaled: journaled, journal: journal, cancellation: cancellation, events: events)
            let parts = try uploader.run()
            if resumed != nil {
                events.send(.resumed(uploadID: uploadID, partsKept: uploader.partsKept, bytesKept: uploader.bytesKept))
            }
            let length = parts.reduce(Int64(0)) { $0 + Int64($1.size) }
            let result = try complete(uploadID: uploadID, parts: parts, length: length, partsSent: parts.count - uploader.partsKept)
            journal?.remove()
            return result
        } catch .cancelled {
            throw .cancelled(uploadID: uploadID)
        } catch .uploadGone(let bucket, let key, let id) {
            // Nothing left for a later run to continue.
            journal?.remove()
            throw .uploadGone(bucket: bucket, key: key, uploadID: id)
        }
    }

    private func validate() throws(S3Error) {
        if options.partSize < S3UploadOptions.minimumPartSize || options.partSize > S3UploadOptions.maximumPartSize {
            throw .invalidConfiguration(name: "partSize", reason: "\(options.partSize) bytes: S3 parts are 5 MiB to 5 GiB")
        }
        if options.parallelParts < 1 || options.parallelParts > 64 {
            throw .invalidConfiguration(name: "parallelParts", reason: "\(options.parallelParts): from 1 to 64")
        }
        if options.maxAttempts < 1 {
            throw .invalidConfiguration(name: "maxAttempts", reason: "\(options.maxAttempts): at least 1")
        }
        if let threshold = options.singlePutThreshold, threshold < 0 || threshold > S3UploadOptions.maximumPartSize {
            throw .invalidConfiguration(name: "singlePutThreshold", reason: "\(threshold) bytes: from 0 to 5 GiB")
        }
        if options.fullObjectChecksum && !options.sendsChecksums {
            throw .invalidConfiguration(name: "fullObjectChecksum", reason: "a full-object checksum needs checksums sent (sendsChecksums)")
        }
        if options.fullObjectChecksum && !options.checksum.combines {
            throw .invalidConfiguration(name: "fullObjectChecksum", reason: "\(options.checksum) checksums do not combine; use crc32, crc32c or crc64nvme")
        }
        if key.isEmpty || key.utf8.count > 1024 {
            throw .invalidConfiguration(name: "key", reason: "an object key has 1 to 1024 bytes")
        }
    }

    /// The part size: the one asked for, grown (in whole MiB) so that the blob fits in 10,000 parts.
    static func partSize(for length: Int64, source: String, options: S3UploadOptions) throws(S3Error) -> Int {
        var size = Int64(options.partSize)
        let count = Int64(S3UploadOptions.maximumPartCount)
        if dividedRoundingUp(length, by: size) > count {
            let mebibyte: Int64 = 1 << 20
            size = dividedRoundingUp(dividedRoundingUp(length, by: count), by: mebibyte) * mebibyte
        }
        guard size <= Int64(S3UploadOptions.maximumPartSize) else { throw .sourceTooLarge(source: source, length: length) }
        return Int(size)
    }

    /// `value / divisor` rounded up, for a `value` of at least 0 and a positive `divisor`,
    /// without the overflow of `(value + divisor - 1) / divisor`: a source may claim a length
    /// near `Int64.max` (an HTTP server chooses its `Content-Length`).
    static func dividedRoundingUp(_ value: Int64, by divisor: Int64) -> Int64 {
        value / divisor + (value % divisor == 0 ? 0 : 1)
    }

    /// The parts of a blob of `length` bytes.
    static func plan(length: Int64, partSize: Int) -> [S3PartPlan] {
        let count = max(1, Int(dividedRoundingUp(length, by: Int64(partSize))))
        return (0..<count).map { index in
            let offset = Int64(index) * Int64(partSize)
            return S3PartPlan(number: index + 1, offset: offset, size: Int(min(Int64(partSize), length - offset)))
        }
    }

    private func putObject(_ reader: S3PartReader, length: Int64) throws(S3Error) -> S3UploadResult {
        let size = Int(length)
        guard let memory = malloc(max(size, 1)) else {
            throw .invalidConfiguration(name: "singlePutThreshold", reason: "a buffer of \(size) bytes cannot be allocated")
        }
        defer { free(memory) }
        let buffer = UnsafeMutableRawBufferPointer(start: memory, count: size)
        let digests = try reader.read(
            S3PartPlan(number: 1, offset: 0, size: size), into: buffer, algorithm: options.checksum, withMD5: options.sendsContentMD5,
            cancellation: cancellation)
        let checksum = digests.checksum.base64
        let call = S3Call(operation: "PutObject", method: "PUT", key: key,
                          fields: [("Content-Type", options.contentType)] + options.integrityFields(digests))
        let payloadHash = options.checksum == .sha256 ? digests.checksum.hex : SigV4Signer.unsignedPayload
        // A refused first connection is a server that is not there: no point in waiting.
        let (eTag, echoed) = try retry.run(key: key, uploadID: nil, partNumber: nil, retryingRefused: false) { () throws(S3Error) -> (String, Bool) in
            let written = LockedValue<Int64>(0)
            let answer = try wire.send(call, body: UnsafeRawBufferPointer(buffer), payloadHash: payloadHash, cancellation: cancellation) {
                [events] count in
                events.send(.sent(sentBytes: written.withLock { $0 += Int64(count); return $0 }, totalBytes: length))
            }
            guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
            let eTag = try S3Client.acknowledged(answer, call: call, bucket: wire.bucket, checksum: options.checksum, sent: checksum)
            return (eTag, answer.head[options.checksum.headerName] == checksum)
        }
        events.send(.progress(completedBytes: length, totalBytes: length))
        return S3UploadResult(bucket: wire.bucket, key: key, eTag: eTag, checksum: options.sendsChecksums ? checksum : nil,
                              checksumVerifiedByServer: options.sendsChecksums && echoed,
                              uploadID: nil, length: length, partCount: 1, partsSent: 1)
    }

    /// Makes the multipart upload; returns its id and how many attempts it took.
    private func create() throws(S3Error) -> (uploadID: String, attempts: Int) {
        var fields = [("Content-Type", options.contentType)]
        if options.sendsChecksums { fields.append(("x-amz-checksum-algorithm", options.checksum.s3Name)) }
        if options.isFullObject { fields.append(("x-amz-checksum-type", "FULL_OBJECT")) }
        let call = S3Call(operation: "CreateMultipartUpload", method: "POST", key: key, query: [("uploads", "")],
                          fields: fields, createsResource: true)
        var attempts = 0
        // A refused first connection is a server that is not there: no point in waiting.
        let uploadID = try retry.run(key: key, uploadID: nil, partNumber: nil, retryingRefused: false) { () throws(S3Error) -> String in
            attempts += 1
            let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
            guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
            guard let root = S3XMLElement.parse(answer.body), root.name == "InitiateMultipartUploadResult",
                  let uploadID = root.value("UploadId"), !uploadID.isEmpty else {
                throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation, reason: "the answer names no UploadId")
            }
            return uploadID
        }
        return (uploadID, attempts)
    }

    /// After a create that was sent more than once: tells of the key's other unfinished
    /// uploads, one of which an earlier attempt may have made (``S3UploadEvent/createdAgain(uploadID:otherUploads:)``).
    /// Not aborted here: one may be another writer's upload of the same key.
    private func reportOtherUploads(than uploadID: String) {
        let others = try? S3Client.unfinishedUploads(prefix: key, pageSize: 1000, wire: wire, retry: retry, cancellation: cancellation)
        events.send(.createdAgain(uploadID: uploadID, otherUploads: others?.filter { $0.key == key && $0.uploadID != uploadID }))
    }

    /// Every part the server lists for `uploadID`, following `NextPartNumberMarker`, and the
    /// upload's checksum algorithm (`CRC32C`) and type (`FULL_OBJECT`) when the server names them.
    func listParts(uploadID: String) throws(S3Error) -> S3Answers.PartListing {
        var listing = S3Answers.PartListing()
        var marker: String?
        repeat {
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let call = S3Call(operation: "ListParts", method: "GET", key: key, query: query, uploadID: uploadID)
            let root = try retry.run(key: key, uploadID: uploadID, partNumber: nil) { () throws(S3Error) -> S3XMLElement in
                let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
                guard (200..<300).contains(answer.statusCode) else { throw wire.failure(of: answer, for: call) }
                // moto names the root ListPartsResponse.
                guard let root = S3XMLElement.parse(answer.body), ["ListPartsResult", "ListPartsResponse"].contains(root.name) else {
                    throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation, reason: "the answer is no ListPartsResult")
                }
                return root
            }
            if let named = root.value("ChecksumAlgorithm"), !named.isEmpty { listing.algorithm = named }
            if let named = root.value("ChecksumType"), !named.isEmpty { listing.checksumType = named.uppercased() }
            for part in root.all("Part") {
                guard let number = part.value("PartNumber").flatMap(Int.init), let size = part.value("Size").flatMap(Int64.init),
                      let eTag = part.value("ETag"), !eTag.isEmpty else {
                    throw .protocolViolation(bucket: wire.bucket, key: key, operation: "ListParts", reason: "a part lacks its number, size or ETag")
                }
                listing.parts.append(S3Answers.ListedPart(
                    number: number, size: size, eTag: eTag, checksum: part.value("Checksum\(options.checksum.s3Name)")))
            }
            guard listing.parts.count <= S3UploadOptions.maximumPartCount else {
                throw .protocolViolation(bucket: wire.bucket, key: key, operation: "ListParts",
                                         reason: "more than \(S3UploadOptions.maximumPartCount) parts listed")
            }
            guard root.value("IsTruncated") == "true" else { break }
            // Pages go forward by part number, so they end: a marker must be a number past the last.
            guard let next = root.value("NextPartNumberMarker"), let nextNumber = Int(next) else {
                throw .protocolViolation(bucket: wire.bucket, key: key, operation: "ListParts",
                                         reason: "a truncated list without a numeric NextPartNumberMarker")
            }
            guard nextNumber > (marker.flatMap(Int.init) ?? 0), nextNumber <= S3UploadOptions.maximumPartCount else {
                throw .protocolViolation(bucket: wire.bucket, key: key, operation: "ListParts",
                                         reason: "a truncated list whose NextPartNumberMarker \(next) does not follow \(marker ?? "0")")
            }
            marker = next
        } while true
        return listing
    }

    private func complete(uploadID: String, parts: [S3CompletedPart], length: Int64, partsSent: Int) throws(S3Error) -> S3UploadResult {
        let body = S3Answers.completeBody(
            parts.map { ($0.number, $0.eTag, options.sendsChecksums ? $0.checksum : nil) }, algorithm: options.checksum)
        // A full-object upload names the whole object's CRC, which S3 checks against the bytes.
        let wholeObject = options.isFullObject ? try S3FullObjectChecksum.combine(parts, algorithm: options.checksum, bucket: wire.bucket, key: key) : nil
        var fields = [("Content-Type", "application/xml")]
        if let wholeObject { fields += [("x-amz-checksum-type", "FULL_OBJECT"), (options.checksum.headerName, wholeObject)] }
        var call = S3Call(operation: "CompleteMultipartUpload", method: "POST", key: key, query: [("uploadId", uploadID)],
                          fields: fields, uploadID: uploadID)
        call.answersSlowly = true
        let payloadHash = SHA256.digest(of: body).hex
        let root: S3XMLElement
        do {
            root = try retry.run(key: key, uploadID: uploadID, partNumber: nil) { () throws(S3Error) -> S3XMLElement in
                var sent: Result<S3Answer, S3Error> = .failure(.cancelled(uploadID: uploadID))
                body.withUnsafeBytes { bytes in
                    sent = Result { () throws(S3Error) in
                        try wire.send(call, body: bytes, payloadHash: payloadHash, cancellation: cancellation)
                    }
                }
                let answer = try sent.get()
                // S3 may answer 200 and still fail, with an <Error> body sent after the status.
                guard (200..<300).contains(answer.statusCode), let root = S3XMLElement.parse(answer.body),
                      root.name != "Error" else {
                    if (200..<300).contains(answer.statusCode), S3XMLElement.parse(answer.body) == nil {
                        throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation, reason: "the answer is no XML")
                    }
                    throw wire.failure(of: answer, for: call)
                }
                return root
            }
        } catch .uploadGone(let bucket, let key, let uploadID) {
            // A Complete whose answer was lost (on a retry, or on a kept-alive connection sent
            // again at once) may have completed the upload: the object then carries the ETag
            // these very parts make, of their length, and only that counts as success.
            guard let eTag = try completedEarlier(parts, length: length) else { throw .uploadGone(bucket: bucket, key: key, uploadID: uploadID) }
            return S3UploadResult(bucket: wire.bucket, key: key, eTag: eTag, checksum: nil, uploadID: uploadID, length: length,
                                  partCount: parts.count, partsSent: partsSent)
        }
        // moto names the root CompleteMultipartUploadResponse.
        guard ["CompleteMultipartUploadResult", "CompleteMultipartUploadResponse"].contains(root.name), let eTag = root.value("ETag"), !eTag.isEmpty else {
            throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation, reason: "the answer names no ETag")
        }
        // A multipart ETag ends in "-" and the part count, whatever the encryption (its hex
        // part is the MD5 of the part MD5s only for unencrypted and SSE-S3 parts, so it is
        // not compared): another count is another object.
        let trimmed = eTag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        if let dash = trimmed.lastIndex(of: "-"), let count = Int(trimmed[trimmed.index(after: dash)...]), count != parts.count {
            throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation,
                                     reason: "the ETag \(eTag) names \(count) parts, but \(parts.count) were completed")
        }
        let checksum = root.value("Checksum\(options.checksum.s3Name)")
        // Base64 has no "-": a value ending in "-N" is a composite of the parts, from a server
        // that ignored the full-object type; it verifies nothing of the whole object.
        let composite = checksum?.contains("-") == true
        if let wholeObject, let checksum, !composite, checksum != wholeObject {
            throw .protocolViolation(bucket: wire.bucket, key: key, operation: call.operation,
                                     reason: "the server computed the \(options.checksum) checksum \(checksum) of the object but its parts make \(wholeObject) "
                                        + "(upload \(uploadID)); the object may exist with other bytes than the source's: check it, or delete it")
        }
        return S3UploadResult(
            bucket: wire.bucket, key: key, eTag: eTag, checksum: wholeObject ?? checksum,
            checksumVerifiedByServer: wholeObject != nil && checksum == wholeObject,
            uploadID: uploadID, length: length, partCount: parts.count, partsSent: partsSent)
    }

    /// The object's ETag when it is the one that completing `parts` makes (the MD5 of the
    /// parts' MD5s, then `-` and their count) and its length is `length`; `nil` when it is
    /// absent or another, or when a part's ETag is no MD5 (encrypted parts) and nothing can be
    /// told.
    private func completedEarlier(_ parts: [S3CompletedPart], length: Int64) throws(S3Error) -> String? {
        var md5 = MD5()
        for part in parts {
            guard let partMD5 = ChecksumDigest(algorithm: .md5, hex: part.eTag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
                return nil
            }
            partMD5.bytes.withUnsafeBytes { md5.update($0) }
        }
        let expected = "\"\(md5.finalize().hex)-\(parts.count)\""
        let call = S3Call(operation: "HeadObject", method: "HEAD", key: key)
        let answer = try retry.run(key: key, uploadID: nil, partNumber: nil) { () throws(S3Error) -> S3Answer in
            let answer = try wire.send(call, body: nil, payloadHash: SigV4Signer.emptyPayload, cancellation: cancellation)
            // Throttling or a server failure says nothing of the object: ask again.
            if answer.statusCode >= 500 { throw wire.failure(of: answer, for: call) }
            return answer
        }
        guard answer.statusCode == 200, answer.head.fields["etag"] == expected,
              answer.head.fields["content-length"].flatMap(Int64.init) == length else { return nil }
        return expected
    }
}
