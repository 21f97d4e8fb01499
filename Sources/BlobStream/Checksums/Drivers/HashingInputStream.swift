import Foundation

/// An `InputStream` that passes the bytes of another stream through unchanged and hashes them
/// on the way, so one read of a blob serves both an upload and its checksum (okio's
/// `HashingSource`, Go's `io.TeeReader` into a `hash.Hash`).
///
/// ```swift
/// let body = HashingInputStream(BlobInputStream(fileAtPath: path), algorithm: .sha256)
/// request.httpBodyStream = body          // URLSession reads it
/// // ... after the upload succeeded:
/// let digest = try body.digest()         // of exactly the bytes that were sent
/// ```
///
/// Every member forwards to ``base``, including the run-loop scheduling and the delegate
/// (which sees this stream as the sender of the base's events). It never lends its buffer
/// (`getBuffer` is `false`), so every byte passes through `read` and is hashed.
///
/// Changing the offset (`.fileCurrentOffsetKey`) is refused once bytes have been hashed,
/// because the digest would no longer describe one contiguous range. Members may be called
/// from any thread the base allows.
public final class HashingInputStream: InputStream, PositionedInputStream, EventDrivenStream, StreamDelegate {
    /// The stream whose bytes are passed through.
    public let base: InputStream

    private let lock = NSLock()
    private var checksum: any Checksum
    private var hashedCount: Int64 = 0
    /// What a read of the base saw: its end (a read of 0), or its failure (a read of -1), kept
    /// because a closed base no longer tells either.
    private var outcome: Result<Void, BlobStreamError>?
    private weak var forwardedDelegate: (any StreamDelegate)?

    /// Wraps `base`, hashing with `algorithm`.
    public convenience init(_ base: InputStream, algorithm: ChecksumAlgorithm = .sha256) {
        self.init(base, checksum: algorithm.makeChecksum())
    }

    /// Wraps `base`, continuing `checksum` (which may already cover earlier bytes, such as the
    /// chunks of an upload sent before).
    public init(_ base: InputStream, checksum: any Checksum) {
        self.base = base
        self.checksum = checksum
        super.init(data: Data())
    }

    /// The algorithm being computed.
    public var algorithm: ChecksumAlgorithm { lock.withLock { checksum.algorithm } }

    /// How many bytes have passed through `read` (and been hashed) so far.
    public var bytesHashed: Int64 { lock.withLock { hashedCount } }

    /// The digest of the bytes read so far, whether or not the base has reached its end: for
    /// progress displays and per-chunk checksums. Use ``digest()`` for the whole stream.
    public var partialDigest: ChecksumDigest { lock.withLock { checksum.finalize() } }

    /// The digest of everything the base delivered, once it has been read to its end.
    /// - Throws: The base's error if it failed; ``BlobStreamError/sourceFailed(resource:reason:)``
    ///   if it has not been read to its end yet (never a digest of partial data).
    public func digest() throws(BlobStreamError) -> ChecksumDigest {
        if case .failure(let error)? = lock.withLock({ outcome }) { throw error }
        if let error = blobError, base.streamStatus == .error { throw error }
        let complete = lock.withLock { outcome != nil } || base.streamStatus == .atEnd || base.knownRemainingLength == 0
        guard complete else {
            throw BlobStreamError.sourceFailed(
                resource: base.blobResourceName,
                reason: "the stream was not read to its end (\(bytesHashed) bytes hashed); the digest would cover part of it"
            )
        }
        return partialDigest
    }

    /// The base's error in typed form.
    public var blobError: BlobStreamError? { base.typedError }

    // MARK: PositionedInputStream

    /// The base's resource name, or "input stream" when the base cannot tell.
    public var resourceName: String { base.blobResourceName }

    /// The base's length, when it is a ``PositionedInputStream`` that knows it.
    public var length: Int64? { base.positioned?.length }

    /// The base's offset; over a stream that cannot tell, the bytes passed on so far (it is
    /// read from where it stood at the first read).
    public var offset: Int64 { base.positioned?.offset ?? bytesHashed }

    /// Whether the base may be closed from any thread.
    public var closesFromAnyThread: Bool { base.canCloseFromAnyThread }

    /// The base's event source: its events drive reads of this stream too.
    package var eventSource: BlobInputStream? { base.eventDrivingStream }

    /// Moves the base to `offset`, before any byte has been hashed.
    /// - Throws: ``BlobStreamError/sourceFailed(resource:reason:)`` once bytes have been hashed
    ///   (the digest would no longer describe one contiguous range) or when the base cannot
    ///   seek; otherwise whatever the base's seek throws.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        let hashed = bytesHashed
        guard hashed == 0 else {
            throw .sourceFailed(
                resource: resourceName,
                reason: "cannot move to offset \(offset) after \(hashed) bytes were hashed; the digest would cover two ranges")
        }
        guard let positioned = base.positioned else {
            throw .sourceFailed(resource: resourceName, reason: "the wrapped stream cannot move to offset \(offset)")
        }
        try positioned.seek(to: offset)
    }

    // MARK: InputStream

    /// Reads from the base and hashes what it returns.
    public override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let count = base.read(buffer, maxLength: len)
        if count > 0 {
            lock.withLock {
                checksum.update(UnsafeRawBufferPointer(start: buffer, count: count))
                hashedCount += Int64(count)
            }
        } else if count == 0, len > 0 {
            lock.withLock { outcome = .success(()) }
        } else if count < 0, base.streamStatus == .error, let error = base.typedError {
            // Only a failure that ends the stream: an asynchronous stream's "no bytes yet" is none.
            lock.withLock { outcome = .failure(error) }
        }
        return count
    }

    /// Always `false`: lending the base's buffer would let bytes bypass the hash.
    public override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
        length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    /// The base's `hasBytesAvailable`.
    public override var hasBytesAvailable: Bool { base.hasBytesAvailable }

    // MARK: Stream

    /// Opens the base.
    public override func open() { base.open() }

    /// Closes the base.
    public override func close() { base.close() }

    /// The base's status.
    public override var streamStatus: Stream.Status { base.streamStatus }

    /// The base's error (``blobError``). Unlike Foundation's own streams on Linux, never traps
    /// when there is none.
    public override var streamError: (any Error)? { blobError }

    /// Receives the base's events and passes them on as this stream's (held weakly).
    public override var delegate: (any StreamDelegate)? {
        get { lock.withLock { forwardedDelegate } }
        set {
            lock.withLock { forwardedDelegate = newValue }
            base.delegate = newValue == nil ? nil : self
        }
    }

    /// The base's property.
    public override func property(forKey key: Stream.PropertyKey) -> AnyObject? {
        base.property(forKey: key)
    }

    /// Sets the base's property; refuses `.fileCurrentOffsetKey` once bytes have been hashed.
    public override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool {
        if key == .fileCurrentOffsetKey && bytesHashed > 0 { return false }
        return base.setProperty(property, forKey: key)
    }

    /// Schedules the base, whose events reach this stream's delegate.
    public override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        base.schedule(in: aRunLoop, forMode: mode)
    }

    /// Unschedules the base.
    public override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {
        base.remove(from: aRunLoop, forMode: mode)
    }

    // MARK: StreamDelegate

    /// Passes an event of the base on, with this stream as its sender; not for direct calls.
    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        delegate?.stream(self, handle: eventCode)
    }
}
