import BlobStream
import Foundation
internal import HTTP1
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of the tus 1.0 resumable upload protocol (<https://tus.io/protocols/resumable-upload>):
/// discovery, creation, chunked upload with per-chunk checksums, resume, termination.
///
/// ```swift
/// let client = TusClient(endpoint: URL(string: "https://example.com/files/")!)
/// let result = try await client.upload(.file(path: "/videos/clip.mov")) { event in
///     if case .created(let url) = event { print(url) }   // save it to resume later
/// }
/// ```
///
/// Each chunk is sent with `Content-Length`: no temporary files, memory about two chunks at
/// most. A file's chunk on the package's own client is read while it is sent (README,
/// "Streamed tus chunks"); any other is read into a reusable buffer before its PATCH starts
/// (the next one while the current one is sent), so there is no deadlock when the source is
/// itself an HTTP download in this process.
///
/// ## Requests stay on the endpoint's origin
/// The client's ``headers`` and those of the options — `Authorization`, `Cookie`,
/// `Proxy-Authorization`, an API key in a header of any name — are meant for the endpoint.
/// So every request goes to the endpoint's origin (scheme, host and effective port) or not
/// at all: an upload URL on another origin, whether from the server's `Location` or given
/// to resume, and a redirect that leaves the origin fail with
/// ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)`` before anything is sent
/// there. Refusing rather than stripping the credentials needs no list of which header
/// fields are credentials, and an upload is never sent unauthenticated to a place its
/// caller did not name.
///
/// Thread-safe; one client can run many uploads at once. Cancel an upload by cancelling the
/// task that awaits it; it can be resumed later from its URL.
public final class TusClient: Sendable {
    /// The creation URL uploads are `POST`ed to (and `OPTIONS` asked).
    public let endpoint: URL
    /// Headers sent with every request (authorization), besides those of the options; only
    /// ever to the endpoint's origin, since any of them may be a credential.
    public let headers: [String: String]
    /// How requests travel.
    public var transport: Transport { client.transport }
    /// Called before every request for fields to add (a fresh token), and once more when one
    /// is refused with 401 or 403 (see ``HeaderProvider``); its fields win over ``headers``
    /// and those of the options, and go to the endpoint's origin only, like them.
    public let headerProvider: HeaderProvider?
    /// The most bytes per second `PATCH` bodies go out at (see ``RateLimit``).
    public var rateLimit: RateLimit? { client.rateLimit }
    let client: UploadHTTPClient

    /// How a client's requests travel: ``BlobTransport/Transport``.
    public typealias Transport = BlobTransport.Transport

    /// Creates a client for the tus server whose creation URL is `endpoint`.
    /// - Parameters:
    ///   - endpoint: The creation URL, e.g. `http://127.0.0.1:18090/files/`.
    ///   - headers: Headers sent with every request. Every request fails with
    ///     ``BlobUploadError/invalidHeader(name:reason:)`` while one has a CR, LF or NUL, a
    ///     name that is not an HTTP token, or is one the protocol sets (`Tus-Resumable`,
    ///     `Upload-*`, `Content-Type`, the framing fields), in any case; so does one passed to a
    ///     single call or in ``TusUploadOptions/headers``.
    ///   - transport: How requests travel; ``Transport/automatic`` by default.
    ///   - configuration: The URLSession configuration, or `nil` for an ephemeral one
    ///     without caches or cookies and the 30 s idle timeout the protocol recommends. On the
    ///     `http:` connections of the package's own client, its `timeoutIntervalForRequest`
    ///     bounds a connect, a whole answer from the end of its request (a server answering
    ///     one byte at a time cannot stretch it), and a silence while a request is sent.
    ///   - minimumSpeed: The slowest a `PATCH` body may be sent on those connections (a server
    ///     reading it one byte at a time fails the request with a time-out);
    ///     ``MinimumSpeed/standard`` by default.
    ///   - headerProvider: Fields computed before each request (see ``headerProvider``).
    ///     Fields it returns that the protocol owns (`Tus-Resumable`, `Upload-*`, `Content-*`,
    ///     `Host`, `Transfer-Encoding`) fail the request with ``BlobUploadError/invalidHeader(name:reason:)``.
    ///   - rateLimit: The most bytes per second `PATCH` bodies go out at; `nil` for no limit.
    ///     On the package's own client the body is paced as it is written; through URLSession
    ///     each chunk waits for its whole share before it is handed over.
    public init(
        endpoint: URL, headers: [String: String] = [:], transport: Transport = .automatic,
        configuration: URLSessionConfiguration? = nil, minimumSpeed: MinimumSpeed = .standard,
        headerProvider: HeaderProvider? = nil, rateLimit: RateLimit? = nil
    ) {
        self.endpoint = endpoint
        self.headers = headers
        self.headerProvider = headerProvider
        client = UploadHTTPClient(
            transport: transport, configuration: configuration ?? URLSessionUploadTransport.defaultConfiguration(), minimumSpeed: minimumSpeed,
            rateLimit: rateLimit)
    }

    /// Asks the server what it supports (`OPTIONS` on the endpoint).
    /// - Throws: ``BlobUploadError/httpStatus(method:url:statusCode:message:)`` for a non-2xx
    ///   answer, ``BlobUploadError/network(method:url:reason:code:)``, ``BlobUploadError/cancelled``.
    public func discover(headers extra: [String: String] = [:]) async throws(BlobUploadError) -> TusServerCapabilities {
        try Self.refuseOwned(extra, by: "the call's headers")
        // The protocol asks clients to leave Tus-Resumable out of OPTIONS.
        let reply = try await send("OPTIONS", endpoint, headers: extra, tusResumable: false)
        guard reply.isSuccess else { throw reply.statusError() }
        return TusServerCapabilities(headers: reply.headers)
    }

    /// Creates an upload of `length` bytes (`POST` to the endpoint) and returns its URL,
    /// resolved against the URL that answered when the server answers with a relative
    /// `Location`: the endpoint, or where a redirect within its origin led the `POST`. A
    /// `Location` on another origin than the endpoint is refused (see the type's discussion):
    /// the upload it names is never sent a byte.
    /// - Parameter metadata: `Upload-Metadata` pairs; tuspyserver and others require
    ///   `filename` and `filetype`.
    /// - Throws: ``BlobUploadError/httpStatus(method:url:statusCode:message:)`` when the server
    ///   answers other than 2xx (the protocol says 201 Created, but any 2xx with a `Location`
    ///   is taken), ``BlobUploadError/protocolViolation(operation:url:reason:)`` without a
    ///   usable `Location`, ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)``
    ///   (with the `PATCH` that would have followed) for one on another origin, ``BlobUploadError/invalidMetadata(key:reason:)``, network errors,
    ///   ``BlobUploadError/cancelled``.
    ///   A success without `Tus-Resumable` is ``BlobUploadError/notTusServer(method:url:statusCode:)``.
    public func create(
        length: Int64, metadata: [String: String], headers extra: [String: String] = [:]
    ) async throws(BlobUploadError) -> URL {
        try await create(length: length, metadata: metadata, headers: extra, optionsShowedTus: true)
    }

    /// ``create(length:metadata:headers:)``, told whether `OPTIONS` showed a tus server; a
    /// `nil` length creates the upload with `Upload-Defer-Length: 1` (the creation-defer-length
    /// extension), its length to come with a later `PATCH`. An
    /// answer without `Tus-Resumable` is a tus server's only when it did: tuspyserver leaves
    /// the header off its errors. Without that, and unless the answer is an authentication
    /// challenge, such an answer means there is no tus server at the endpoint.
    func create(
        length: Int64?, metadata: [String: String], headers extra: [String: String], optionsShowedTus: Bool
    ) async throws(BlobUploadError) -> URL {
        try Self.refuseOwned(extra, by: "the call's headers")
        var headers = extra
        if let length {
            headers["Upload-Length"] = String(length)
        } else {
            headers["Upload-Defer-Length"] = "1"
        }
        let encoded = try TusMetadata.encode(metadata)
        if !encoded.isEmpty { headers["Upload-Metadata"] = encoded }
        let reply = try await send("POST", endpoint, headers: headers, body: .data(Data()))
        if reply.header("tus-resumable") == nil,
           reply.isSuccess || (!optionsShowedTus && ![401, 407].contains(reply.statusCode)) {
            throw .notTusServer(method: "POST", url: endpoint.absoluteString, statusCode: reply.statusCode)
        }
        guard reply.isSuccess else { throw reply.statusError() }
        guard let location = reply.header("location"), !location.isEmpty else {
            throw .protocolViolation(operation: .tus(method: "POST"), url: endpoint.absoluteString, reason: "the creation answer has no Location header")
        }
        // Relative to the URL that answered: a redirect within the origin may have moved the
        // creation away from the endpoint, and its Location is relative to where it went.
        guard let url = URL(string: location, relativeTo: reply.url)?.absoluteURL else {
            throw .protocolViolation(operation: .tus(method: "POST"), url: endpoint.absoluteString, reason: "the Location \"\(location)\" is not a URL")
        }
        guard URLOrigin(url) == URLOrigin(endpoint) else {
            throw .crossOriginRefused(method: "PATCH", url: url.absoluteString, allowedOrigin: "\(URLOrigin(endpoint))")
        }
        return url
    }

    /// Asks the server how much of the upload at `uploadURL` it has (`HEAD`).
    /// - Throws: ``BlobUploadError/uploadGone(url:statusCode:)`` for 404/410,
    ///   ``BlobUploadError/notTusServer(method:url:statusCode:)`` for a success with neither
    ///   `Tus-Resumable` nor `Upload-Offset`, ``BlobUploadError/protocolViolation(operation:url:reason:)``
    ///   without a valid `Upload-Offset`, other statuses, network errors, cancellation;
    ///   ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)`` when `uploadURL` is
    ///   not on the endpoint's origin.
    public func status(of uploadURL: URL, headers extra: [String: String] = [:]) async throws(BlobUploadError) -> TusUploadStatus {
        try Self.refuseOwned(extra, by: "the call's headers")
        let reply = try await send("HEAD", uploadURL, headers: extra)
        if [404, 410].contains(reply.statusCode) {
            throw .uploadGone(url: uploadURL.absoluteString, statusCode: reply.statusCode)
        }
        guard reply.isSuccess else { throw reply.statusError() }
        // A plain file, not an upload: the answer of a web server.
        guard reply.header("tus-resumable") != nil || reply.header("upload-offset") != nil else {
            throw .notTusServer(method: "HEAD", url: uploadURL.absoluteString, statusCode: reply.statusCode)
        }
        guard let offset = reply.header("upload-offset").flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }),
              offset >= 0 else {
            throw .protocolViolation(operation: .tus(method: "HEAD"), url: uploadURL.absoluteString, reason: "the HEAD answer has no valid Upload-Offset")
        }
        let length = reply.header("upload-length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        if let length, offset > length {
            throw .protocolViolation(
                operation: .tus(method: "HEAD"), url: uploadURL.absoluteString, reason: "Upload-Offset \(offset) is past Upload-Length \(length)")
        }
        return TusUploadStatus(
            offset: offset, length: length,
            metadata: reply.header("upload-metadata").map(TusMetadata.decode) ?? [:])
    }

    /// Terminates the upload at `uploadURL` (`DELETE`, the termination extension): the
    /// server frees it and answers 404 or 410 from then on.
    /// - Throws: ``BlobUploadError/uploadGone(url:statusCode:)`` when it was already gone, other
    ///   statuses, network errors, cancellation;
    ///   ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)`` when `uploadURL` is
    ///   not on the endpoint's origin.
    public func terminate(_ uploadURL: URL, headers extra: [String: String] = [:]) async throws(BlobUploadError) {
        try Self.refuseOwned(extra, by: "the call's headers")
        let reply = try await send("DELETE", uploadURL, headers: extra, body: .data(Data()))
        if [404, 410].contains(reply.statusCode) {
            throw .uploadGone(url: uploadURL.absoluteString, statusCode: reply.statusCode)
        }
        guard reply.isSuccess else { throw reply.statusError() }
    }

    /// Uploads `source`: creates a new upload, or continues the one at `uploadURL`, and sends
    /// the bytes the server lacks in PATCH requests of ``TusUploadOptions/chunkSize``, until
    /// the server has them all. Failures are retried as ``TusRetryPolicy`` says, each time from
    /// the offset the server reports.
    ///
    /// - Parameters:
    ///   - source: Where the bytes come from. Live data of unknown length
    ///     (``UploadSource/live(name:_:)``) needs a server with the creation-defer-length
    ///     extension: the upload is created with `Upload-Defer-Length: 1`, and the `PATCH` that
    ///     ends the data declares its length, the bytes sent; otherwise it fails with
    ///     ``BlobUploadError/deferLengthUnsupported(endpoint:source:)`` before anything is read.
    ///   - uploadURL: An upload created earlier (by this or another process) to continue, or
    ///     `nil` to create one. Its `Upload-Length` must equal the source's length, and the
    ///     `filename` in its `Upload-Metadata`, where it has one, the filename the source would
    ///     be uploaded as, or it fails before anything is sent with
    ///     ``BlobUploadError/lengthMismatch(url:serverLength:sourceLength:)`` or
    ///     ``BlobUploadError/filenameMismatch(url:uploadFilename:sourceFilename:)``. It
    ///     must be on the endpoint's origin (the client's headers are meant for that origin
    ///     only): another one fails with
    ///     ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)``, unasked.
    ///   - options: Chunking, metadata, checksums, retries.
    ///   - events: Called, on the uploading task, with ``TusUploadEvent/created(uploadURL:)``
    ///     as soon as a new upload exists, progress as the server confirms bytes, and retries;
    ///     and with ``TusUploadEvent/sent(_:)`` as a `PATCH` body goes out, from the sending
    ///     thread while the task waits for that request (never at the same time as another event).
    /// - Returns: The finished upload.
    /// - Throws: ``BlobUploadError`` — ``BlobUploadError/uploadGone(url:statusCode:)``,
    ///   ``BlobUploadError/retriesExhausted(url:offset:attempts:lastError:)``,
    ///   ``BlobUploadError/source(_:)``, ``BlobUploadError/cancelled`` and the others;
    ///   ``BlobUploadError/protocolViolation(operation:url:reason:)`` when the server confirms bytes
    ///   it cannot have received (more than this client sent it), so a server can never make
    ///   the upload report success for bytes it did not receive.
    public func upload(
        _ source: UploadSource,
        resuming uploadURL: URL? = nil,
        options: TusUploadOptions = TusUploadOptions(),
        events: (@Sendable (TusUploadEvent) -> Void)? = nil
    ) async throws(BlobUploadError) -> TusUploadResult {
        let upload = TusUpload(client: self, source: source, options: options, events: events ?? { _ in })
        return try await upload.run(resuming: uploadURL)
    }

    /// Whether a request to `url` is finished with its body when it returns, so the body may
    /// share memory that the caller reuses afterwards.
    func isDoneWithBodies(at url: URL) -> Bool {
        client.isDoneWithBodies(at: url)
    }
}
