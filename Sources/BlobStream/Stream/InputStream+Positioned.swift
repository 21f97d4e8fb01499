import Foundation

// What code that takes any InputStream needs to know about it: the answers of its
// capabilities (PositionedInputStream.swift), and what Foundation's own streams can tell
// otherwise. Their `streamError` getter traps on Linux when there is no error, so it is read
// only in the `.error` state.

extension InputStream {
    /// The stream's ``PositionedInputStream`` answers, if it gives them all.
    package var positioned: (any PositionedInputStream)? { self as? any PositionedInputStream }

    /// The path, URL or identifier the stream reads, for error messages.
    package var blobResourceName: String { (self as? any NamedStream)?.resourceName ?? "input stream" }

    /// Why the last operation failed, as a ``BlobStreamError``, or `nil` if the stream reports
    /// no error.
    package var typedError: BlobStreamError? {
        if let typed = self as? any TypedErrorStream { return typed.blobError }
        guard streamStatus == .error, let error = streamError else { return nil }
        return BlobStreamError(foundationStreamError: error, resource: blobResourceName)
    }

    /// Whether `close()` may be called from another thread while a read is in progress.
    package var canCloseFromAnyThread: Bool { (self as? any InterruptibleStream)?.closesFromAnyThread ?? false }

    /// The bytes between the current position and the end, when the stream knows them.
    package var knownRemainingLength: Int64? { (self as? any MeasuredStream)?.remainingLength }

    /// The asynchronous ``BlobInputStream`` whose events drive reads of this stream, if any.
    package var eventDrivingStream: BlobInputStream? { (self as? any EventDrivenStream)?.eventSource }
}
