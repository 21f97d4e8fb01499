/// What a data source learned when it opened: how long the blob is and which version of it
/// the source is reading.
public struct BlobSourceDescription: Sendable, Hashable {
    /// The total length of the blob in bytes, or `nil` when the source cannot know it up front
    /// (for example a chunked HTTP response). When it is known, the stream treats any end of
    /// data before this length as an error, never as a short blob.
    public var length: Int64?

    /// An opaque token that names the version of the blob: an inode and modification time, an
    /// HTTP entity tag, an asset's revision. After a reopen the stream compares the new token
    /// with the first one and fails with ``BlobStreamError/sourceChanged(resource:offset:reason:)``
    /// if they differ, or if the first open named a version and the reopen names none, so bytes
    /// of two versions are never mixed. `nil` means "not known": a source that never names a
    /// version can only be checked by its length.
    public var version: String?

    /// The blob's media type (`image/jpeg`), when the source knows it. Only reported (as
    /// `Content-Type` by ``BlobURLProtocol``); never compared on a reopen.
    public var mediaType: String?

    /// Creates a description.
    /// - Parameters:
    ///   - length: The total length in bytes, or `nil` when unknown.
    ///   - version: A version token, or `nil` when the source has none.
    ///   - mediaType: The media type, or `nil` when the source does not know it.
    public init(length: Int64?, version: String? = nil, mediaType: String? = nil) {
        self.length = length
        self.version = version
        self.mediaType = mediaType
    }
}

/// The answer of one ``BlobDataSource/read(into:at:whenReadable:)`` call.
public enum BlobSourceReadResult: Sendable, Equatable {
    /// `count` bytes (always more than zero) were written to the start of the buffer.
    case read(Int)
    /// There are no bytes at this offset because the blob ends here. Only a source that knows
    /// the data is complete may answer this; a source that merely has no bytes *yet* answers
    /// ``wouldBlock``.
    case end
    /// No bytes are available at this offset yet. The source keeps the `whenReadable` callback
    /// of this call and invokes it exactly once, on any thread, when a new call may succeed
    /// (bytes arrived, the transfer ended or failed, or the handle went stale).
    case wouldBlock
    /// The source's handle went stale (an asset library changed, a connection dropped). This is
    /// not a failure: the stream closes the source, opens it again and repeats the read at the
    /// same offset.
    case invalidated
    /// The read failed for good. The stream reports this error unchanged.
    case failed(BlobStreamError)
}

/// A place a ``BlobInputStream`` reads its bytes from: a file, an asset store, an HTTP server.
///
/// ## Contract
/// The stream is the only caller. It calls the methods in this order:
/// `open` → any number of `read` → `close`, and after an invalidation, or to start again,
/// `open` once more on the same object (a source must support being reopened after `close`).
///
/// - Calls are never concurrent: the stream never calls `read` or `close` while another call
///   of this source is running, and never calls `read` before `open` has completed
///   successfully. They may come from different threads.
/// - `open` may complete synchronously (calling `completion` before it returns) or later, on
///   any thread. It calls `completion` exactly once — unless `close` comes first, after which
///   the source may drop the pending completion (the stream has stopped waiting for it).
/// - `read` must not wait for slow work: a source whose bytes arrive asynchronously answers
///   ``BlobSourceReadResult/wouldBlock`` and calls `whenReadable` later. Reads of local storage
///   (`pread` of a file or of an asset's file) count as immediate.
/// - Reads are positional: the stream passes the absolute offset of the byte it wants. This is
///   why reopening after an invalidation needs no cursor bookkeeping in the source, why files
///   can use `pread` and assets their offset-based reads, and why a seek is free. The stream
///   asks for contiguous, increasing offsets except after a seek or a reopen; a source that can
///   only go forward (an HTTP transfer) restarts itself when the offset jumps.
/// - The stream asks for at least its block size at a time (unless the blob ends sooner), so a
///   source may assume large reads; it may return fewer bytes than asked.
/// - `close` releases every resource, cancels outstanding work and drops any `whenReadable`
///   callback it still holds without calling it. It may be called more than once.
///
/// Inspired by okio's `Source` and Go's `io.ReaderAt`: one small interface, decorated by
/// features rather than grown by them.
public protocol BlobDataSource: AnyObject, Sendable {
    /// A human-readable name of what is being read (a path, a URL, an asset identifier), used in
    /// error messages.
    var resourceName: String { get }

    /// The block size this source reads best at. The stream uses it as its default
    /// ``BlobInputStream/blockSize``. Expensive sources (assets, networks) ask for large blocks.
    var preferredBlockSize: Int { get }

    /// Whether every read answers at once, never ``BlobSourceReadResult/wouldBlock``: a file, or
    /// memory. An asynchronous stream then lets its reader fill straight into its own buffer
    /// instead of reading ahead into a cache and copying out of it. A source that says so and
    /// still answers `wouldBlock` is served correctly, only with a read that finds no bytes
    /// after `hasBytesAvailable`. `false` by default.
    var readsImmediately: Bool { get }

    /// Opens (or reopens) the source and calls `completion` exactly once, synchronously or later
    /// on any thread, with the blob's description or the reason it could not be opened.
    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void)

    /// Opens (or reopens) the source, as ``open(completion:)`` does, for a reader whose first
    /// read will be at `offset`: the offset a stream was positioned at before its open (a
    /// resumed upload), or the one it had reached when it reopens.
    ///
    /// Positional sources (files, assets, memory) need not care, and the default calls
    /// ``open(completion:)``. A source that has to start slow work at some offset (an HTTP
    /// source's first request) starts it here, rather than at 0 only to restart it when the
    /// first read asks for another offset.
    func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    )

    /// Copies bytes that start at `offset` into `buffer` without waiting for slow work.
    /// - Parameters:
    ///   - buffer: Where to write; never empty. Valid only during the call.
    ///   - offset: The absolute offset of the first byte wanted, at least 0 and, when the length
    ///     is known, at most the length.
    ///   - whenReadable: Kept only when the answer is ``BlobSourceReadResult/wouldBlock``, and then
    ///     called exactly once, on any thread, when another read may make progress; it may even
    ///     be called before `read` returns.
    func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult

    /// Releases the source's resources. Idempotent; the source may be opened again afterwards.
    func close()

    /// Called by a synchronous stream just before it blocks the calling thread to wait for this
    /// source (an open, a reopen, or a read that answered ``BlobSourceReadResult/wouldBlock``).
    /// Return why that wait could never end — the source needs the very thread or queue that
    /// would be blocked, like an asset store that answers only on the main queue when the caller
    /// is the main thread — and the stream fails at once with
    /// ``BlobStreamError/wouldDeadlock(resource:reason:)`` instead of hanging. Return `nil` when
    /// waiting is safe.
    func reasonWaitingWouldDeadlock() -> String?

    /// Confirms, without waiting, that the blob is still the version that `open` described.
    ///
    /// The stream calls this once per pass to the end, so a blob rewritten in place while it was
    /// read ends in an error, never in a success made of two versions. When the length is known,
    /// the call comes as soon as the last byte has been read from the source and before that
    /// byte reaches the consumer; when it is not, the call comes when the source answers
    /// ``BlobSourceReadResult/end``, and it is the end of data that is held back.
    /// Like `read`, it is never concurrent with another call of the source, and only comes
    /// between a successful `open` and `close`.
    ///
    /// A file compares its device, inode, size, modification and status-change times with those
    /// of the open (one `fstat`); a source whose every response is validated on its own (an
    /// HTTP source, which compares each response's validators with the pinned ones) has nothing
    /// more to check.
    /// - Parameter offset: The offset the stream has reached: the end of the blob.
    /// - Returns: `nil` when the version is unchanged or the source cannot tell more than it did
    ///   at `open`; otherwise the error that replaces the end of data, normally
    ///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``.
    func confirmUnchanged(at offset: Int64) -> BlobStreamError?
}

extension BlobDataSource {
    /// Calls ``open(completion:)``: a positional source reads any offset equally well.
    public func open(
        at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        open(completion: completion)
    }

    /// 64 KiB: the size of URLSession's reads, which then go straight into the caller's buffer.
    public var preferredBlockSize: Int { 64 * 1024 }

    /// `false`: by default a source may have to wait for its bytes.
    public var readsImmediately: Bool { false }

    /// `nil`: by default a source needs no particular thread to make progress.
    public func reasonWaitingWouldDeadlock() -> String? { nil }

    /// `nil`: by default a source has no cheaper check than the one its `open` made.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? { nil }
}

