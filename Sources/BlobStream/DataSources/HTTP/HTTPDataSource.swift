import Foundation
internal import HTTP1
internal import SystemCalls

/// Streams a blob from an HTTP(S) server with `GET` and `Range`, in bounded memory, resuming
/// after dropped connections, and never mixing two versions of the blob.
///
/// ## Reading
/// The source downloads ahead of the reader into a buffer of
/// ``Configuration/readAheadLimit`` bytes (4 MiB by default). When the buffer is full the
/// download pauses, and it resumes once the reader has consumed half, so memory never grows with
/// the blob. A read answers with buffered bytes at once, or ``BlobSourceReadResult/wouldBlock``
/// and calls `whenReadable` as soon as bytes arrive, which is what fires `hasBytesAvailable` in
/// an asynchronous ``BlobInputStream``. A read at an offset outside the buffer (a seek) starts a
/// new request there.
///
/// ## Versions
/// The first response pins the blob: its validators (`ETag`, `Last-Modified`) and its length
/// when it names one; the description's `version` is the `ETag`, else the `Last-Modified`
/// date. (A first response that is a `416` at the blob's end naming no validator, as nginx's
/// is, pins the length only: no byte was read, and the first response with bytes pins its
/// validators.) Every later response that carries bytes (`200` or `206`) is compared with the pin before
/// a byte of it is used, and any difference fails the read at the offset asked for with
/// ``BlobStreamError/sourceChanged(resource:offset:reason:)``:
/// - its `ETag` must be identical to the pinned one, and absent only if that was absent: a tag
///   that appears, changes or disappears is another version;
/// - unless the pinned `ETag` was strong, its `Last-Modified` must be identical too, by the same
///   rule (a weak tag or a date alone does not prove the same bytes, so every validator given is
///   held to);
/// - the length it names (a `206`'s `Content-Range` total, a `200`'s `Content-Length`) must be
///   the length any earlier response named, a `206` (even of total `*`) may not reach past it,
///   and a `200` of unknown length must still reach it.
/// Requests after the first carry `If-Range` with the pinned strong `ETag`, or else with
/// `Last-Modified` when it is a strong validator (the same response's `Date` is a second or more
/// later, RFC 9110 §8.8.2.2), so a server whose blob changed answers `200` with the new blob. A
/// weak tag or date is never sent (RFC 9110 §13.1.5) but still compared. A server that names no
/// validator at all can only be checked by length, and one that names only a date cannot tell
/// two versions written within the same second apart. One source reads one version for its
/// whole life; create a new one to read a newer.
///
/// ## Servers
/// A server that ignores `Range` and answers `200` with the whole blob of the pinned version is
/// handled by skipping the bytes before the wanted offset (they are downloaded again after every
/// reconnect). `416` at exactly the end of the blob means there is nothing more (the validators
/// it names, if any, must be the pinned ones); one that answers the first request, opened past
/// the end, with the blob's length is ``BlobStreamError/invalidOffset(resource:offset:length:)``;
/// a `416` that names another length or other validators than the pinned ones is
/// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` (the blob shrank between two
/// requests); any other `416`, and every other status but `200` and `206` (after redirects), fails with
/// ``BlobStreamError/httpStatus(url:statusCode:message:)``, with what the start of its body
/// says in one line — after the reconnects of
/// ``Configuration/maxRetries`` when it says to ask again later (408, 429, a 5xx but 501 and 505),
/// each waiting at least the `Retry-After` seconds it names (a server that asks for more than
/// 30 s is not asked again).
/// Redirects are followed (the source only sends `GET`), at most 16; `Authorization`,
/// `Proxy-Authorization`, `Cookie` and the fields named in
/// ``Configuration/credentialHeaders`` are dropped when a redirect leaves their scheme, host and
/// port, and stay dropped for the rest of that request's redirects. Both transports hold every
/// response head to the same rules (checked in one place), and a response
/// that breaks one fails with ``BlobStreamError/protocolViolation(url:reason:)``, not retried:
/// a transfer coding other than `chunked` (`gzip, chunked` would deliver gzip bytes), any
/// content coding (`Accept-Encoding: identity` is sent, and a range of an encoded
/// representation is not a range of the blob), `Transfer-Encoding` together with
/// `Content-Length`, an invalid or conflicting `Content-Length`, a `206` whose `Content-Range`
/// is missing, starts elsewhere than asked or disagrees with its `Content-Length`, more than 100
/// header fields or 64 KiB of head, a malformed status line or header line, a chunk size that
/// is not hexadecimal or overflows 63 bits. A response framed by neither `Content-Length` nor
/// chunked coding ends where the server closes the connection, so a clean close in the middle of
/// such a body cannot be told from its end, unless an earlier response named the length; every
/// HTTP/1.1 server that names a length (nginx always does for files) is safe.
///
/// On Linux, URLSession (the transport of `https:`) ends the process when a peer closes the
/// connection inside a response head (swift-corelibs-foundation issue 5285, fixed upstream by
/// pull request 5286); the socket transport of `http:` reports a network error.
///
/// ## Failures
/// A dropped connection, a body shorter than announced, a timeout
/// (``Configuration/requestTimeout``, ``Configuration/idleTimeout``), or a status that says to
/// ask again later (waiting at least its `Retry-After`) is handled inside the source: it reconnects at the first byte it does not have, checked against the pin, after
/// ``Configuration/retryDelay`` doubling each time, at most ``Configuration/maxRetries`` times in
/// a row, while reads answer `wouldBlock`; the output stays byte-identical. It does not return
/// ``BlobSourceReadResult/invalidated`` for this, because a reopen by the stream would drop the
/// buffered bytes and has no backoff, and because only the source can tell a drop from a
/// changed blob. When the retries run out, the read at the first missing byte fails with the
/// last error: ``BlobStreamError/timedOut(resource:operation:seconds:)``,
/// ``BlobStreamError/network(url:reason:)`` or ``BlobStreamError/httpStatus(url:statusCode:message:)``.
///
/// ## Transports and which compositions work
/// With ``Transport/automatic``, `http:` runs over a TCP connection of the source's own, on a
/// thread of its own: a synchronous ``BlobInputStream`` over it works anywhere, even as the
/// `httpBodyStream` of a URLSession upload (though on Linux, while such a read waits for the
/// network, no other URLSession of the process makes progress). `https:` (and everything with
/// ``Transport/urlSession``) runs through URLSession. On Linux every URLSession of the process
/// works on one shared serial queue, and URLSession reads an upload's body stream on that queue,
/// so a synchronous read that waits there for a URLSession download could never finish:
/// ``reasonWaitingWouldDeadlock()`` detects that wait and the stream fails at once with
/// ``BlobStreamError/wouldDeadlock(resource:reason:)`` instead of hanging. So, over URLSession:
/// - reading on your own thread or queue (a checksum, a copy): works;
/// - an asynchronous ``BlobInputStream``: works;
/// - a synchronous ``BlobInputStream`` as the body of a URLSession upload: fails fast. Upload with
///   the tus client of `BlobUpload` (which reads each chunk into memory before sending it), or
///   fill the upload from another thread.
public final class HTTPDataSource: BlobDataSource {
    /// The blob's URL, `http:` or `https:`.
    public let url: URL
    /// The settings given at creation.
    public let configuration: Configuration

    let state = LockedValue(State())
    /// Why this source can never open (a bad URL or header), found at creation.
    private let setupProblem: BlobStreamError?

    /// Creates a source for `url`. Nothing is sent until the stream opens it.
    /// - Parameters:
    ///   - url: An `http:` or `https:` URL with a host. Anything else fails the open with
    ///     ``BlobStreamError/unsupportedURL(url:reason:)``.
    ///   - configuration: Headers, buffer size, timeouts, retries and transport.
    public init(url: URL, configuration: Configuration = Configuration()) {
        self.url = url
        var configuration = configuration
        configuration.readAheadLimit = max(16 * 1024, configuration.readAheadLimit)
        configuration.maxRetries = max(0, configuration.maxRetries)
        self.configuration = configuration
        setupProblem = Self.problem(with: url, headers: configuration.headers)
    }

    deinit {
        close()
    }

    static func problem(with url: URL, headers: [String: String]) -> BlobStreamError? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return .unsupportedURL(url: url.absoluteString, reason: "HTTPDataSource reads only http and https URLs")
        }
        guard let host = url.host, !host.isEmpty else {
            return .unsupportedURL(url: url.absoluteString, reason: "the URL has no host")
        }
        guard URLOrigin.usablePort(of: url) != nil else {
            return .unsupportedURL(url: url.absoluteString, reason: "the port is not a number from 1 to 65535")
        }
        if let problem = HTTPRangeRequest.problem(in: headers) {
            return .sourceFailed(resource: url.absoluteString, reason: problem)
        }
        return nil
    }

    /// The URL.
    public var resourceName: String { url.absoluteString }

    /// What the source has done so far; for tests (`@testable import`), not part of the API.
    var statistics: Statistics {
        state.withLock { s in
            var statistics = s.statistics
            statistics.bufferedBytes = s.buffer?.count ?? 0
            return statistics
        }
    }

    /// Sends the first request (from the offset the reader was at, 0 at first) and completes
    /// with the blob's length and version once the response head has arrived and matches the
    /// pinned version, or with why it cannot be read.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        start(at: nil, completion: completion)
    }

    /// Sends the first request from `offset`, where the reader will read first (a stream
    /// positioned before its open, a resumed upload), so that no request from another offset
    /// has to be cancelled and sent again; otherwise as ``open(completion:)``.
    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        start(at: max(0, offset), completion: completion)
    }

    /// Opens with the first request at `offset`, or where the reader was when `nil`.
    private func start(
        at offset: Int64?, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        let immediate: Result<BlobSourceDescription, BlobStreamError>? = transition { s, effects in
            closeNow(&s, &effects)
            if let setupProblem { return .failure(setupProblem) }
            if let offset { s.bufferStart = offset }
            s.isOpen = true
            s.buffer = ReadAheadBuffer(capacity: configuration.readAheadLimit)
            s.failure = nil
            s.endOfData = false
            s.consecutiveFailures = 0
            s.slowFailures = 0
            if let pinned = s.pinned, let length = s.knownLength, s.bufferStart >= length {
                s.endOfData = true
                return .success(pinned)
            }
            s.pendingOpen = completion
            resumeIfNeeded(&s, &effects)
            return nil
        }
        if let immediate { completion(immediate) }
    }

    /// Copies buffered bytes at `offset`, or answers `wouldBlock` until they arrive; see the
    /// type's documentation.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        transition { s, effects in
            guard s.isOpen, let ring = s.buffer else { return .failed(.notOpen) }
            if let length = s.knownLength {
                if offset > length { return .failed(.invalidOffset(resource: resourceName, offset: offset, length: length)) }
                if offset == length { return .end }
            }
            // The blob's last byte waits until its transfer has ended cleanly, so bytes past the
            // declared end, or an end that breaks, fail the read instead of ending it.
            let readable = s.frontier - (s.knownLength == s.frontier && !s.endOfData ? 1 : 0)
            if offset >= s.bufferStart && offset < readable {
                ring.discard(Int(offset - s.bufferStart))
                let count = ring.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), readable - offset)))))
                s.bufferStart = offset + Int64(count)
                releaseWriterIfRoom(&s, &effects)
                resumeIfNeeded(&s, &effects)
                return .read(count)
            }
            if offset == readable {
                if s.endOfData { return .end }
                if let failure = s.failure { return .failed(failure) }
            } else if offset != s.frontier {
                // A seek: what is buffered is not what the reader wants.
                cancelTransfer(&s, &effects, keepingBuffered: false)
                s.buffer?.removeAll()  // not `ring`: a buffer lent to the cancelled transfer was replaced
                s.bufferStart = offset
                s.failure = nil
                s.endOfData = false
                s.retryToken += 1
                s.retryPending = false
                s.consecutiveFailures = 0
                s.slowFailures = 0
            }
            resumeIfNeeded(&s, &effects)
            if let previous = s.waiter { effects.wake.append(previous) }
            s.waiter = whenReadable
            return .wouldBlock
        }
    }

    /// Lets a transfer waiting for room go on once half the buffer is free.
    private func releaseWriterIfRoom(_ s: inout State, _ effects: inout Effects) {
        guard var transfer = s.transfer, let semaphore = transfer.spaceWaiter, let buffer = s.buffer,
              buffer.freeCount >= buffer.capacity / 2 else { return }
        transfer.spaceWaiter = nil
        s.transfer = transfer
        effects.signal.append(semaphore)
    }

    /// Stops the download and frees the buffer. The pinned version and the reader's offset are
    /// kept for a later open. An open still in progress completes with
    /// ``BlobStreamError/closed``.
    public func close() {
        transition { s, effects in closeNow(&s, &effects) }
    }

    private func closeNow(_ s: inout State, _ effects: inout Effects) {
        cancelTransfer(&s, &effects, keepingBuffered: false)
        if let completion = s.pendingOpen { effects.open = (completion, .failure(.closed)) }
        s.pendingOpen = nil
        s.isOpen = false
        s.buffer = nil
        s.waiter = nil
        s.retryToken += 1
        s.retryPending = false
    }

    /// Why a synchronous stream must not wait for this source here: the wait is on one of
    /// URLSession's queues (see the type's documentation) while this source's requests go
    /// through URLSession. `nil` when waiting is safe, as it always is for the socket transport.
    public func reasonWaitingWouldDeadlock() -> String? {
        let usesURLSession = !configuration.transport.route(for: url).pausesDownloads
            || state.withLock { $0.lastTransferUsedURLSession }
        guard usesURLSession, let queue = URLSessionWorkQueue.current() else { return nil }
        return "a synchronous read is waiting on URLSession's queue \"\(queue)\" (for example as the httpBodyStream of a URLSession upload), and this source's download needs that same queue; read on another thread, use an asynchronous stream, or upload with the tus client, which reads each chunk into memory first"
    }
}
