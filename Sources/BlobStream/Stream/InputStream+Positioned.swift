import Foundation

// What code that takes any InputStream needs to know about it: the answers of a
// PositionedInputStream, and what Foundation's own streams can tell otherwise. Their
// `streamError` getter traps on Linux when there is no error, so it is read only in the
// `.error` state.

extension InputStream {
    /// The stream's ``PositionedInputStream`` answers, if it gives them.
    var positioned: (any PositionedInputStream)? { self as? any PositionedInputStream }

    /// The path, URL or identifier the stream reads, for error messages.
    var blobResourceName: String { positioned?.resourceName ?? "input stream" }

    /// Why the last operation failed, as a ``BlobStreamError``, or `nil` if the stream reports
    /// no error.
    var typedError: BlobStreamError? {
        if let positioned { return positioned.blobError }
        guard streamStatus == .error, let error = streamError else { return nil }
        return BlobStreamError(foundationStreamError: error, resource: blobResourceName)
    }

    /// Whether `close()` may be called from another thread while a read is in progress.
    var canCloseFromAnyThread: Bool { positioned?.closesFromAnyThread ?? false }

    /// The bytes between the current position and the end, when the stream knows them.
    var knownRemainingLength: Int64? { positioned?.remainingLength }
}
