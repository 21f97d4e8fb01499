import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One run of ``TusClient/upload(_:resuming:options:events:)``: the state machine that
/// creates or resumes an upload, sends chunks, and recovers from failures by asking the
/// server for its offset. Used by one task only.
final class TusUpload {
    private let client: TusClient
    private let source: UploadSource
    private let options: TusUploadOptions
    private let emit: @Sendable (TusUploadEvent) -> Void
    private let reader: ChunkReader

    private var uploadURL: URL?
    private var length: Int64 = 0
    /// What the server has confirmed: the only offset a PATCH is ever sent from.
    private var offset: Int64 = 0
    private var startOffset: Int64 = 0
    /// The most the server can have: the end of the furthest PATCH body sent to this upload,
    /// or the offset it reported when this run resumed it. A server that reports more claims
    /// bytes it never received.
    private var sentEnd: Int64 = 0
    private var checksumAlgorithm: ChecksumAlgorithm?
    /// Whether `OPTIONS` answered with `Tus-Version`, as a tus server must.
    private var optionsShowedTus = false
    /// Failures since the offset last moved forward.
    private var failures = 0
    /// 460 answers for the chunk at `offset`.
    private var mismatches = 0
    private var restarts = 0
    private var retries = 0
    private var bytesSent: Int64 = 0

    init(client: TusClient, source: UploadSource, options: TusUploadOptions, events: @escaping @Sendable (TusUploadEvent) -> Void) {
        self.client = client
        self.source = source
        self.options = options
        self.emit = events
        reader = ChunkReader(source: source, chunkSize: options.chunkSize)
    }

    func run(resuming existing: URL?) async throws(BlobUploadError) -> TusUploadResult {
        try options.validate()
        let capabilities = try await discover()
        checksumAlgorithm = options.checksum.algorithm(for: capabilities)
        if let existing {
            try await resume(existing)
        } else {
            length = try await reader.start(at: 0)
            try check(length, against: capabilities)
            try await createUpload()
        }
        startOffset = offset
        emit(.progress(TransferProgress(completedBytes: offset, totalBytes: length)))
        while offset < length {
            if Task.isCancelled { throw .cancelled }
            try await reader.prepareChunk(at: offset)
            do {
                let confirmed = try await sendChunk()
                advance(to: confirmed)
            } catch {
                try await recover(from: error)
            }
        }
        await reader.close()
        return TusUploadResult(
            uploadURL: uploadURL ?? client.endpoint, length: length, startOffset: startOffset,
            bytesSent: bytesSent, retries: retries, checksumAlgorithm: checksumAlgorithm?.name)
    }

    // MARK: Steps

    private func discover() async throws(BlobUploadError) -> TusServerCapabilities {
        let capabilities: TusServerCapabilities
        do {
            capabilities = try await retrying { () async throws(BlobUploadError) in
                try await client.discover(headers: options.headers)
            }
        } catch .httpStatus(_, _, let status, _) where (400..<500).contains(status) {
            // OPTIONS is optional for servers: assume only the core protocol.
            return .unknown
        }
        optionsShowedTus = !capabilities.versions.isEmpty
        if !capabilities.versions.isEmpty, !capabilities.versions.contains("1.0.0") {
            throw .protocolViolation(
                url: client.endpoint.absoluteString,
                reason: "the server speaks tus \(capabilities.versions.joined(separator: ", ")), not 1.0.0")
        }
        return capabilities
    }

    private func check(_ length: Int64, against capabilities: TusServerCapabilities) throws(BlobUploadError) {
        if let maxSize = capabilities.maxSize, length > maxSize {
            throw .tooLarge(endpoint: client.endpoint.absoluteString, length: length, maxSize: maxSize)
        }
    }

    private func createUpload() async throws(BlobUploadError) {
        var metadata = options.metadata
        metadata["filename"] = filename
        metadata["filetype"] = options.filetype
        let length = self.length
        let url = try await retrying { () async throws(BlobUploadError) in
            try await client.create(
                length: length, metadata: metadata, headers: options.headers, optionsShowedTus: optionsShowedTus)
        }
        uploadURL = url
        offset = 0
        sentEnd = 0
        mismatches = 0
        emit(.created(uploadURL: url))
    }

    private func resume(_ url: URL) async throws(BlobUploadError) {
        uploadURL = url
        let status: TusUploadStatus
        do {
            status = try await serverStatus()
        } catch .uploadGone(let goneURL, let code) {
            length = try await reader.start(at: 0)
            try await restart(after: .uploadGone(url: goneURL, statusCode: code))
            return
        }
        try await requireMatch(status, at: url)
        length = try await reader.start(at: status.offset)
        // An upload this run did not start: the server's offset is all there is to go by.
        offset = status.offset
        sentEnd = status.offset
        emit(.resumed(uploadURL: url, offset: offset))
    }

    /// Refuses to continue the upload at `url` with a source that is not its blob, before a
    /// byte is read at the server's offset (which may lie beyond a smaller source's end) or
    /// sent: by length, and by the filename the upload carries where its metadata has one.
    /// The name compared is the one the upload would be created with (``TusUploadOptions/filename``
    /// when given), so a caller resumes a renamed file by giving its old name.
    private func requireMatch(_ status: TusUploadStatus, at url: URL) async throws(BlobUploadError) {
        // A declared length needs no stream; otherwise the stream the upload continues with is
        // opened at the server's offset to learn it (a source that must fetch its bytes, such
        // as an HTTP server, is then asked once, from there). Nothing is read before the
        // lengths agree; a source that ends before the offset names its length in the error.
        let sourceLength: Int64
        if let declared = source.length {
            sourceLength = declared
        } else {
            do {
                sourceLength = try await reader.start(at: status.offset)
            } catch .source(.invalidOffset(_, _, let length?)) {
                sourceLength = length
            }
        }
        if status.length != sourceLength {
            throw .lengthMismatch(url: url.absoluteString, serverLength: status.length, sourceLength: sourceLength)
        }
        if let uploadFilename = status.metadata["filename"], uploadFilename != filename {
            throw .filenameMismatch(url: url.absoluteString, uploadFilename: uploadFilename, sourceFilename: filename)
        }
    }

    /// The `filename` metadata a new upload gets.
    private var filename: String {
        options.filename ?? Self.lastComponent(of: source.name)
    }

    /// Sends the prepared chunk from `offset`; returns the server's new offset.
    private func sendChunk() async throws(BlobUploadError) -> Int64 {
        guard let uploadURL else { throw .protocolViolation(url: client.endpoint.absoluteString, reason: "no upload") }
        var headers = options.headers
        headers["Content-Type"] = "application/offset+octet-stream"
        headers["Upload-Offset"] = String(offset)
        if let checksumAlgorithm {
            headers["Upload-Checksum"] = await reader.checksum(checksumAlgorithm)
        }
        var body = reader.chunkData(copying: !client.isDoneWithBodies(at: uploadURL))
        if let hook = options.chunkBodyHook {
            body = await hook(offset, body)
        }
        bytesSent += Int64(body.count)
        let end = offset + Int64(body.count)
        sentEnd = max(sentEnd, end)
        reader.prefetchNext()
        let reply = try await client.send("PATCH", uploadURL, headers: headers, body: body)
        if [404, 410].contains(reply.statusCode) {
            throw .uploadGone(url: uploadURL.absoluteString, statusCode: reply.statusCode)
        }
        guard reply.isSuccess else { throw reply.statusError() }
        guard let confirmed = reply.header("upload-offset").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw .protocolViolation(url: uploadURL.absoluteString, reason: "the PATCH answer has no valid Upload-Offset")
        }
        // Less than the whole body is a partial write, continued from there; more than it would
        // leave a hole the upload reported complete.
        guard confirmed > offset, confirmed <= end else {
            throw .protocolViolation(
                url: uploadURL.absoluteString,
                reason: "the PATCH of \(end - offset) bytes from offset \(offset) answered Upload-Offset \(confirmed)")
        }
        return confirmed
    }

    private func advance(to confirmed: Int64) {
        if confirmed > offset {
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
        case .uploadGone:
            try await restart(after: error)
            return
        case .httpStatus(_, _, 460, _):
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
        if let serverLength = status.length, serverLength != length {
            throw .lengthMismatch(url: uploadURL?.absoluteString ?? "", serverLength: serverLength, sourceLength: length)
        }
        guard status.offset <= sentEnd else {
            throw .protocolViolation(
                url: uploadURL?.absoluteString ?? "",
                reason: "the HEAD answered Upload-Offset \(status.offset), but only \(sentEnd) bytes were ever sent")
        }
        advance(to: status.offset)
    }

    private func serverStatus() async throws(BlobUploadError) -> TusUploadStatus {
        guard let uploadURL else { throw .protocolViolation(url: client.endpoint.absoluteString, reason: "no upload") }
        return try await retrying { () async throws(BlobUploadError) in
            try await client.status(of: uploadURL, headers: options.headers)
        }
    }

    /// Starts over with a new upload when the caller allows it, else rethrows `gone`.
    private func restart(after gone: BlobUploadError) async throws(BlobUploadError) {
        guard options.restartIfGone, restarts < options.retry.maxAttempts, let goneURL = uploadURL else { throw gone }
        restarts += 1
        emit(.restarting(goneURL: goneURL))
        try await createUpload()
        emit(.progress(TransferProgress(completedBytes: 0, totalBytes: length)))
    }

    // MARK: Retrying

    private func retrying<T>(_ operation: () async throws(BlobUploadError) -> T) async throws(BlobUploadError) -> T {
        while true {
            do {
                return try await operation()
            } catch {
                try await countFailure(error, waiting: true)
            }
        }
    }

    /// Counts a failure against the budget and waits before the next try; rethrows failures
    /// that another try cannot fix, and the last one when the budget is spent.
    private func countFailure(_ error: BlobUploadError, waiting: Bool) async throws(BlobUploadError) {
        guard Self.isTransient(error) else { throw error }
        failures += 1
        retries += 1
        if failures >= options.retry.maxAttempts {
            throw .retriesExhausted(
                url: (uploadURL ?? client.endpoint).absoluteString, offset: offset,
                attempts: failures, lastError: error)
        }
        let delay = waiting ? options.retry.delay(forAttempt: failures) : 0
        emit(.retrying(attempt: failures, delay: delay, error: error))
        if delay > 0 {
            do {
                try await Task.sleep(nanoseconds: Self.nanoseconds(forDelay: delay))
            } catch {
                throw .cancelled
            }
        }
    }

    /// `delay` seconds for `Task.sleep`, within 0 and a day: a policy's delay can be anything a
    /// `Double` holds (infinite, not a number), and converting those traps.
    static func nanoseconds(forDelay delay: TimeInterval) -> UInt64 {
        guard delay > 0 else { return 0 }
        return UInt64(min(delay, 86_400) * 1_000_000_000)
    }

    /// Failures that may pass: the connection, a restarting or busy server, a lost race.
    static func isTransient(_ error: BlobUploadError) -> Bool {
        switch error {
        case .network(_, _, _, let code):
            let permanent: Set<Int> = [
                URLError.Code.badURL.rawValue, URLError.Code.unsupportedURL.rawValue,
                URLError.Code.cannotFindHost.rawValue,
            ]
            return !permanent.contains(code ?? 0)
        case .httpStatus(_, _, let status, _):
            return status >= 500 || [408, 409, 423, 429, 460].contains(status)
        default:
            return false
        }
    }

    private static func lastComponent(of name: String) -> String {
        let component = URL(string: name)?.lastPathComponent ?? (name as NSString).lastPathComponent
        return component.isEmpty || component == "/" ? name : component
    }
}
