import Foundation

/// What an `InputStream` can say about itself beyond what Foundation's API lets it: the blob it
/// reads, its error in typed form, its length and position, whether it may be closed from any
/// thread, and a seek that says why it failed.
///
/// Code that takes any `InputStream` (an upload, a checksum) asks `stream as? any
/// PositionedInputStream` and uses these when it gets them, the way Go code asks a reader for
/// the optional `io.Seeker` or `io.WriterTo`; other streams are read from their start, with
/// what Foundation offers. ``BlobInputStream`` and ``HashingInputStream`` adopt it, and so may
/// a caller's own stream type.
public protocol PositionedInputStream: InputStream {
    /// The path, URL or identifier the stream reads, for error messages.
    var resourceName: String { get }

    /// Why the last operation failed, as a ``BlobStreamError``, or `nil` if nothing failed.
    /// Unlike `streamError` on Foundation's own streams on Linux, reading it never traps.
    var blobError: BlobStreamError? { get }

    /// The blob's length in bytes once the stream is open, if it is known.
    var length: Int64? { get }

    /// The offset in the blob of the next byte `read` returns.
    var offset: Int64 { get }

    /// Whether `close()` may be called from another thread while a read is blocked, and makes
    /// that read return at once: what lets a cancelled upload free the thread that reads.
    var closesFromAnyThread: Bool { get }

    /// Moves to `offset`: before `open()`, where the first read starts; after it, a seek.
    /// - Throws: ``BlobStreamError/invalidOffset(resource:offset:length:)`` for a negative
    ///   offset or one past a known length; ``BlobStreamError/closed`` or the stream's own
    ///   error when it can no longer move; ``BlobStreamError/sourceFailed(resource:reason:)``
    ///   when the stream cannot move at all at this point.
    func seek(to offset: Int64) throws(BlobStreamError)
}

extension PositionedInputStream {
    /// The bytes between ``offset`` and the end, when the length is known.
    public var remainingLength: Int64? { length.map { max(0, $0 - offset) } }
}
