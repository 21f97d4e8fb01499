import Foundation

// What an `InputStream` can say about itself beyond what Foundation's API lets it, as small
// capabilities that code taking any `InputStream` asks for one at a time, the way Go code asks
// a reader for the optional `io.Seeker` or `io.Closer`; other streams are read from their start,
// with what Foundation offers. ``BlobInputStream`` and ``HashingInputStream`` adopt them all
// (``PositionedInputStream``), and so may a caller's own stream type.

/// A stream that names the blob it reads.
public protocol NamedStream: InputStream {
    /// The path, URL or identifier the stream reads, for error messages.
    var resourceName: String { get }
}

/// A stream that reports its failure typed.
public protocol TypedErrorStream: InputStream {
    /// Why the last operation failed, as a ``BlobStreamError``, or `nil` if nothing failed.
    /// Unlike `streamError` on Foundation's own streams on Linux, reading it never traps.
    var blobError: BlobStreamError? { get }
}

/// A stream that knows where it is in its blob.
public protocol MeasuredStream: InputStream {
    /// The blob's length in bytes once the stream is open, if it is known.
    var length: Int64? { get }

    /// The offset in the blob of the next byte `read` returns.
    var offset: Int64 { get }
}

/// A stream that can move (Go's `io.Seeker`).
public protocol SeekableStream: InputStream {
    /// Moves to `offset`: before `open()`, where the first read starts; after it, a seek.
    /// - Throws: ``BlobStreamError/invalidOffset(resource:offset:length:)`` for a negative
    ///   offset or one past a known length; ``BlobStreamError/closed`` or the stream's own
    ///   error when it can no longer move; ``BlobStreamError/sourceFailed(resource:reason:)``
    ///   when the stream cannot move at all at this point.
    func seek(to offset: Int64) throws(BlobStreamError)
}

/// A stream that another thread may stop: the one interruptible-stream capability, which
/// ``Interrupter`` asks for.
public protocol InterruptibleStream: InputStream {
    /// Whether `close()` may be called from another thread while a read is blocked, and makes
    /// that read return at once: what lets a cancelled upload free the thread that reads.
    var closesFromAnyThread: Bool { get }
}

/// Every capability at once: what ``BlobInputStream`` and ``HashingInputStream`` offer.
public typealias PositionedInputStream = NamedStream & TypedErrorStream & MeasuredStream & SeekableStream & InterruptibleStream

extension MeasuredStream {
    /// The bytes between ``offset`` and the end, when the length is known.
    public var remainingLength: Int64? { length.map { max(0, $0 - offset) } }
}

/// A stream whose reads are driven by the events of an asynchronous ``BlobInputStream``
/// (itself, or the stream it wraps): a ``ChecksumCalculator`` then waits for those events
/// instead of blocking a thread in `read`.
package protocol EventDrivenStream: InputStream {
    /// The asynchronous stream whose events say when this one can be read, if any.
    var eventSource: BlobInputStream? { get }
}
