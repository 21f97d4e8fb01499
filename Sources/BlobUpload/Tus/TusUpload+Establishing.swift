import BlobStream
import Foundation

/// Establishing the upload a ``TusUpload`` sends to: what the server supports (`OPTIONS`), a
/// new upload (`POST`), or an existing one to continue (`HEAD`), checked against the source
/// before a byte is sent.
extension TusUpload {
    func discover() async throws(BlobUploadError) -> TusServerCapabilities {
        let capabilities: TusServerCapabilities
        do {
            capabilities = try await retrying { () async throws(BlobUploadError) in
                try await client.discover(headers: options.headers)
            }
        } catch .httpStatus(_, _, let status, _) where ((400..<500).contains(status) && ![401, 403, 407].contains(status)) || status == 501 {
            // OPTIONS is optional for servers (501: not implemented): assume only the core
            // protocol; the creation then tells a tus server from another. A refusal of the
            // credentials (401, 403, 407) is no such answer: it would refuse the upload too,
            // and taken for "no extensions" it would be reported as one missing.
            return .unknown
        }
        optionsShowedTus = !capabilities.versions.isEmpty
        if !capabilities.versions.isEmpty, !capabilities.versions.contains("1.0.0") {
            throw .protocolViolation(
                operation: .tus(method: "OPTIONS"), url: client.endpoint.absoluteString,
                reason: "the server speaks tus \(capabilities.versions.joined(separator: ", ")), not 1.0.0")
        }
        return capabilities
    }

    /// Refuses a length past the server's `Tus-Max-Size`: a known one before the upload is
    /// created, live data's as it grows.
    func checkMaxSize(_ length: Int64) throws(BlobUploadError) {
        if let maxSize, length > maxSize {
            throw .tooLarge(endpoint: client.endpoint.absoluteString, length: length, maxSize: maxSize)
        }
    }

    /// Creates the upload of live data, whose length comes with its last `PATCH`; refused
    /// before anything is pulled from the source when the server cannot defer the length.
    func startLive(with capabilities: TusServerCapabilities) async throws(BlobUploadError) {
        guard capabilities.extensions.contains("creation-defer-length") else {
            throw .deferLengthUnsupported(endpoint: client.endpoint.absoluteString, source: source.name)
        }
        try await reader.startLive()
        try await createUpload()
    }

    /// Creates a new upload of ``length``, or of a deferred length while it is not known.
    func createUpload() async throws(BlobUploadError) {
        var metadata = options.metadata
        metadata["filename"] = filename
        metadata["filetype"] = options.filetype
        // The version read (known once the reader started): a later resume checks it.
        if let version = reader.pin.pinned {
            metadata[Self.sourceVersionKey] = version
        }
        let length = self.length
        var reachedServer = 0
        let url = try await retrying { () async throws(BlobUploadError) in
            do throws(BlobUploadError) {
                return try await client.create(
                    length: length, metadata: metadata, headers: options.headers, optionsShowedTus: optionsShowedTus)
            } catch {
                if Self.mayHaveReachedServer(error) { reachedServer += 1 }
                throw error
            }
        }
        uploadURL = url
        lengthPending = length == nil
        offset = 0
        sentEnd = 0
        furthestConfirmed = 0
        mismatches = 0
        emit(.created(uploadURL: url))
        if source.confirmsVersion, reader.pin.pinned == nil, !source.isLive { emit(.unversioned(source: source.name)) }
        if reachedServer > 0 { emit(.createdAgain(uploadURL: url, earlierAttempts: reachedServer)) }
        journal?.start(.tus(uploadURL: url))
    }

    /// Whether a creation that failed with `error` may still have made an upload: anything but
    /// a connection that was never made.
    static func mayHaveReachedServer(_ error: BlobUploadError) -> Bool {
        guard case .network(_, _, _, let code?) = error else { return true }
        return ![URLError.Code.cannotConnectToHost.rawValue, URLError.Code.cannotFindHost.rawValue].contains(code)
    }

    func resume(_ url: URL) async throws(BlobUploadError) {
        if source.isLive {
            throw .invalidOption(
                name: "resuming",
                reason: "\(source.name) is live data, read once from its first byte: it cannot continue the upload at \(url.absoluteString)")
        }
        uploadURL = url
        let status: TusUploadStatus
        do {
            status = try await serverStatus()
        } catch .uploadGone(let goneURL, let code) {
            length = try await reader.start(at: 0)
            try await restart(after: .uploadGone(url: goneURL, statusCode: code))
            return
        }
        try await continueUpload(at: url, status: status)
    }

    /// Continues the upload at `url`, of which the server reported `status`, once the source
    /// is confirmed to be its blob.
    func continueUpload(at url: URL, status: TusUploadStatus) async throws(BlobUploadError) {
        // Pinned before the reader opens a stream, so the first one already must be the
        // version the upload was started with: a rewritten file of the same length and name
        // would otherwise be continued, and the server would hold a mix of two versions.
        if let recorded = status.metadata[Self.sourceVersionKey] {
            reader.pin.expect(recorded)
        }
        try await requireMatch(status, at: url)
        length = try await reader.start(at: status.offset)
        if source.confirmsVersion, reader.pin.pinned == nil {
            throw .source(.sourceChanged(
                resource: source.name, offset: status.offset,
                reason: "it names no version (no ETag or Last-Modified), so nothing confirms that it still has the bytes "
                    + "\(url.absoluteString) holds, and continuing could mix two versions"))
        }
        // An upload this run did not start: the server's offset is all there is to go by.
        offset = status.offset
        sentEnd = status.offset
        furthestConfirmed = status.offset
        emit(.resumed(uploadURL: url, offset: offset))
    }

    /// Refuses to continue the upload at `url` with a source that is not its blob, before a
    /// byte is read at the server's offset (which may lie beyond a smaller source's end) or
    /// sent: by length, and by the filename the upload carries where its metadata has one.
    /// The name compared is the one the upload would be created with (``TusUploadOptions/filename``
    /// when given), so a caller resumes a renamed file by giving its old name.
    func requireMatch(_ status: TusUploadStatus, at url: URL) async throws(BlobUploadError) {
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

    /// The metadata key of the source's version (``BlobSourceDescription/version``: for a
    /// file its device, inode, size and times; for an HTTP blob its validator), recorded when
    /// the upload is created and required when it is resumed. An upload without it (made by
    /// another client) is compared by length and filename only.
    static let sourceVersionKey = "blobstream-source-version"

    /// The `filename` metadata a new upload gets.
    var filename: String {
        options.filename ?? source.path.map { Self.lastComponent(ofPath: $0) } ?? Self.lastComponent(of: source.name)
    }


    /// The last path component of a source's name (a path or a URL), never the whole name: a
    /// URL's query, user and password (a token, a signed link) must not reach the tus server
    /// as metadata. A URL without a path component is named by its host, or "upload".
    static func lastComponent(of name: String) -> String {
        guard let url = URL(string: name), url.scheme != nil else { return lastComponent(ofPath: name) }
        let component = url.lastPathComponent
        if !component.isEmpty, component != "/" { return component }
        if let host = url.host, !host.isEmpty { return host }
        return "upload"
    }

    /// The last component of a file's path, or "upload" for none (`/`).
    static func lastComponent(ofPath path: String) -> String {
        let component = (path as NSString).lastPathComponent
        return component.isEmpty || component == "/" ? "upload" : component
    }

    /// Compares the length a `HEAD` reports with the source's. A deferred length the server
    /// does not have yet is declared again by the `PATCH` that ends the data; a length it has
    /// must be the source's, and cannot come before the source's end is known.
    func checkLength(_ status: TusUploadStatus) throws(BlobUploadError) {
        let url = uploadURL?.absoluteString ?? ""
        guard let serverLength = status.length else {
            if source.isLive { lengthPending = true; return }
            // This upload's length was declared at its creation: an upload without one is not
            // this upload, and the server would never finish it.
            throw .lengthMismatch(url: url, serverLength: nil, sourceLength: length ?? 0)
        }
        guard let length else {
            throw .protocolViolation(
                operation: .tus(method: "HEAD"), url: url,
                reason: "the HEAD answered Upload-Length \(serverLength), but the length was deferred and has not been sent yet")
        }
        guard serverLength == length else {
            throw .lengthMismatch(url: url, serverLength: serverLength, sourceLength: length)
        }
        lengthPending = false
    }
}
