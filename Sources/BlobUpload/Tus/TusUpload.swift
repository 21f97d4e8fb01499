import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
internal import SystemCalls
#endif

/// One run of ``TusClient/upload(_:resuming:options:events:)``: the state machine that
/// creates or resumes an upload, sends chunks, and recovers from failures by asking the
/// server for its offset. Used by one task only.
final class TusUpload {
    let client: TusClient
    let source: UploadSource
    let options: TusUploadOptions
    let emit: @Sendable (TusUploadEvent) -> Void
    let reader: TusChunkReader

    var uploadURL: URL?
    /// The source's length; `nil` while live data has not reached its end.
    var length: Int64?
    /// Whether the upload was created with a deferred length that the server has not been
    /// told yet: the `PATCH` that ends at the length carries `Upload-Length`.
    var lengthPending = false
    /// What the server has confirmed: the only offset a PATCH is ever sent from.
    var offset: Int64 = 0
    var startOffset: Int64 = 0
    /// The most the server can have: the end of the furthest PATCH body sent to this upload,
    /// or the offset it reported when this run resumed it. A server that reports more claims
    /// bytes it never received.
    var sentEnd: Int64 = 0
    /// ``sentEnd`` before the latest PATCH: what stands when that PATCH is known to have put
    /// nothing on the server (it never connected, or the server refused its checksum).
    var sentEndBeforeChunk: Int64 = 0
    var checksumAlgorithm: ChecksumAlgorithm?
    /// The server's `Tus-Max-Size` (``checkMaxSize(_:)``).
    var maxSize: Int64?
    /// Whether `OPTIONS` answered with `Tus-Version`, as a tus server must.
    var optionsShowedTus = false
    /// The furthest offset the server has confirmed to this run: only passing it is progress.
    /// A server that confirms bytes, loses them and takes them again would otherwise reset
    /// the failure count on every round and be retried for good.
    var furthestConfirmed: Int64 = 0
    /// Failures since the offset last passed ``furthestConfirmed``.
    var failures = 0
    /// 460 answers for the chunk at `offset`.
    var mismatches = 0
    private var restarts = 0
    var retries = 0
    var bytesSent: Int64 = 0
    /// The upload's journal, once the source's version is known (see ``openJournal()``).
    var journal: UploadJournalSession?

    init(client: TusClient, source: UploadSource, options: TusUploadOptions, events: @escaping @Sendable (TusUploadEvent) -> Void) {
        self.client = client
        self.source = source
        self.options = options
        self.emit = events
        reader = TusChunkReader(source: source, chunkSize: options.chunkSize)
    }

    func run(resuming existing: URL?) async throws(BlobUploadError) -> TusUploadResult {
        do {
            return try await runSteps(resuming: existing)
        } catch {
            // A read ahead may still wait in the source: stop it now, not when it returns.
            reader.interrupt()
            // An upload the server no longer has cannot be continued by a later run either.
            if case .uploadGone = error { journal?.remove() }
            throw error
        }
    }

    private func runSteps(resuming existing: URL?) async throws(BlobUploadError) -> TusUploadResult {
        try options.validate()
        let capabilities = try await discover()
        checksumAlgorithm = options.checksum.algorithm(for: capabilities)
        maxSize = capabilities.maxSize
        if let existing {
            try await resume(existing)
            // Recorded too, so that a later run continues it unasked (a new one, if it was gone).
            openJournal()
            if let uploadURL { journal?.start(.tus(uploadURL: uploadURL)) }
        } else if source.isLive {
            try await startLive(with: capabilities)
        } else {
            let length = try await reader.start(at: 0)
            self.length = length
            try checkMaxSize(length)
            openJournal()
            try await continueJournaledOrCreate()
        }
        startOffset = offset
        emit(.progress(TransferProgress(completedBytes: offset, totalBytes: length)))
        while lengthPending || length.map({ offset < $0 }) ?? true {
            if Task.isCancelled { throw .cancelled }
            let streamed = try await streamableChunk()
            if streamed == nil {
                let known = try await reader.prepareChunk(at: offset)
                if source.isLive { length = known }
            }
            do {
                let confirmed = try await sendChunk(streaming: streamed)
                advance(to: confirmed)
            } catch {
                try await recover(from: error)
            }
        }
        if source.isLive, let length { try await confirmDeclaredLength(length) }
        journal?.remove()
        await reader.close()
        return TusUploadResult(
            uploadURL: uploadURL ?? client.endpoint, length: length ?? offset, startOffset: startOffset,
            bytesSent: bytesSent, retries: retries, checksumAlgorithm: checksumAlgorithm?.name)
    }

    /// The byte count of the chunk at `offset` when it is sent as it is read, its stream
    /// positioned (``TusChunkReader/positionForStreaming(at:)``); `nil` when it is prepared
    /// whole: a checksum or a body hook needs the whole chunk first, URLSession may read a body
    /// after its call returned, and only a file's reads never wait on the request's thread.
    private func streamableChunk() async throws(BlobUploadError) -> Int? {
        guard checksumAlgorithm == nil, options.chunkBodyHook == nil, source.readsWithoutWaiting,
              let uploadURL, client.isDoneWithBodies(at: uploadURL) else { return nil }
        return try await reader.positionForStreaming(at: offset)
    }

    /// Sends the chunk from `offset`, prepared or, with `streamed` bytes, read as it is sent;
    /// returns the server's new offset.
    private func sendChunk(streaming streamed: Int?) async throws(BlobUploadError) -> Int64 {
        guard let uploadURL else { throw .protocolViolation(operation: .tus(method: "PATCH"), url: client.endpoint.absoluteString, reason: "no upload") }
        var headers = options.headers
        headers["Content-Type"] = "application/offset+octet-stream"
        headers["Upload-Offset"] = String(offset)
        if let checksumAlgorithm {
            headers["Upload-Checksum"] = await reader.checksum(checksumAlgorithm)
        }
        let body: RequestBody
        if let streamed {
            body = reader.streamedBody(at: offset, count: streamed)
        } else {
            var data = reader.chunkData(copying: !client.isDoneWithBodies(at: uploadURL))
            if let hook = options.chunkBodyHook {
                data = await hook(offset, data)
            }
            body = .data(data)
        }
        let end = offset + Int64(body.count)
        if source.isLive { try checkMaxSize(end) }
        bytesSent += Int64(body.count)
        sentEndBeforeChunk = sentEnd
        sentEnd = max(sentEnd, end)
        // The deferred length goes with the body that ends there: what the server was told is
        // then exactly what it was sent.
        let declaresLength = lengthPending && end == length
        if declaresLength {
            headers["Upload-Length"] = String(end)
        }
        if streamed == nil { reader.prefetchNext() }
        let (emit, start, length) = (self.emit, offset, self.length)
        let reply: HTTPReply
        do {
            // Told the bytes of this PATCH written so far; a PATCH sent again counts from 0.
            reply = try await client.send("PATCH", uploadURL, headers: headers, body: body) { sent in
                emit(.sent(TransferProgress(completedBytes: start, totalBytes: length, sentBytes: start + Int64(sent))))
            }
        } catch {
            // A PATCH whose connection was never made sent the server nothing.
            if !Self.mayHaveReachedServer(error) { sentEnd = sentEndBeforeChunk }
            // A streamed body that stopped short ended the request; the read says why.
            if streamed != nil, let failure = reader.takeStreamFailure() { throw failure }
            throw error
        }
        if [404, 410].contains(reply.statusCode) {
            throw .uploadGone(url: uploadURL.absoluteString, statusCode: reply.statusCode)
        }
        guard reply.isSuccess else { throw reply.statusError() }
        guard let confirmed = reply.header("upload-offset").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw .protocolViolation(operation: .tus(method: "PATCH"), url: uploadURL.absoluteString, reason: "the PATCH answer has no valid Upload-Offset")
        }
        // Less than the whole body is a partial write, continued from there; more than it would
        // leave a hole the upload reported complete. Only the empty body that declares the
        // length of empty live data moves nothing.
        guard confirmed > offset || (confirmed == offset && end == offset), confirmed <= end else {
            throw .protocolViolation(
                operation: .tus(method: "PATCH"), url: uploadURL.absoluteString,
                reason: "the PATCH of \(end - offset) bytes from offset \(offset) answered Upload-Offset \(confirmed)")
        }
        if declaresLength { lengthPending = false }
        return confirmed
    }

    /// Asks the server whether it took the length the last `PATCH` of live data declared: a
    /// server that ignored it answers that PATCH like any other, yet keeps an upload of
    /// unknown length that it never finishes.
    private func confirmDeclaredLength(_ length: Int64) async throws(BlobUploadError) {
        let status: TusUploadStatus
        do {
            status = try await serverStatus()
        } catch .uploadGone {
            // A server may move an upload away once it is finished (a post-finish hook): the
            // last PATCH was confirmed at the length, and there is nothing left to ask.
            return
        }
        guard status.length == length, status.offset == length else {
            throw .protocolViolation(
                operation: .tus(method: "HEAD"), url: uploadURL?.absoluteString ?? client.endpoint.absoluteString,
                reason: "all \(length) bytes were sent and the last PATCH declared Upload-Length \(length), but the HEAD "
                    + "answers Upload-Length \(status.length.map(String.init) ?? "none") and Upload-Offset \(status.offset): "
                    + "the server did not finish the upload")
        }
    }

    func advance(to confirmed: Int64) {
        if confirmed > furthestConfirmed {
            furthestConfirmed = confirmed
            failures = 0
            mismatches = 0
        }
        offset = confirmed
        emit(.progress(TransferProgress(completedBytes: offset, totalBytes: length)))
    }

    /// Decides whether a failed PATCH is worth another try, waits if it is, and learns the
    /// server's real offset before anything is sent again.
    private func recover(from error: BlobUploadError) async throws(BlobUploadError) {
        switch error {
        case .tooLarge:
            throw error
        case .uploadGone:
            try await restart(after: error)
            return
        case .httpStatus(_, _, 460, _):
            // The server refused the chunk's checksum and stored none of it (tus checksum
            // extension): a HEAD that claims its bytes claims bytes it discarded.
            sentEnd = sentEndBeforeChunk
            mismatches += 1
            retries += 1
            if mismatches >= options.maxChecksumMismatches {
                throw .checksumMismatch(url: uploadURL?.absoluteString ?? "", offset: offset, attempts: mismatches)
            }
            emit(.retrying(attempt: mismatches, delay: 0, error: error))
        case .httpStatus(_, _, 409, _):
            try await countFailure(error, waiting: false)
        default:
            try await countFailure(error, waiting: true)
        }
        let status: TusUploadStatus
        do {
            status = try await serverStatus()
        } catch .uploadGone(let url, let code) {
            try await restart(after: .uploadGone(url: url, statusCode: code))
            return
        }
        try checkLength(status)
        guard status.offset <= sentEnd else {
            throw .protocolViolation(
                operation: .tus(method: "HEAD"), url: uploadURL?.absoluteString ?? "",
                reason: "the HEAD answered Upload-Offset \(status.offset), but only \(sentEnd) bytes were ever sent")
        }
        advance(to: status.offset)
    }

    func serverStatus() async throws(BlobUploadError) -> TusUploadStatus {
        guard let uploadURL else { throw .protocolViolation(operation: .tus(method: "HEAD"), url: client.endpoint.absoluteString, reason: "no upload") }
        return try await retrying { () async throws(BlobUploadError) in
            try await client.status(of: uploadURL, headers: options.headers)
        }
    }

    /// Starts over with a new upload when the caller allows it, else rethrows `gone`.
    func restart(after gone: BlobUploadError) async throws(BlobUploadError) {
        guard options.restartIfGone, restarts < options.retry.maxAttempts, let goneURL = uploadURL else { throw gone }
        if source.isLive, offset > 0 {
            throw .notReplayable(source: source.name, offset: 0, available: offset)
        }
        // A source past the server's Tus-Max-Size is refused before a new upload, as at first.
        if let length { try checkMaxSize(length) }
        restarts += 1
        emit(.restarting(goneURL: goneURL))
        try await createUpload()
        emit(.progress(TransferProgress(completedBytes: 0, totalBytes: length)))
    }
}
