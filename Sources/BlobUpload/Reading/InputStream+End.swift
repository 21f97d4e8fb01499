import BlobStream
import Foundation

extension InputStream {
    /// Whether the stream says it ended: `.atEnd`, or — only for a stream that keeps no status
    /// (a plain subclass stays `.notOpen` throughout) — no bytes available. FoundationNetworking
    /// ends a body on either. A stream that keeps its status is never taken to have ended by
    /// having no bytes: an asynchronous ``BlobInputStream`` has none while it opens or waits
    /// for its source, and a body it was cut off at would look whole.
    var saysItEnded: Bool {
        switch streamStatus {
        case .atEnd: return true
        case .notOpen: return !(self is any PositionedInputStream) && !hasBytesAvailable
        default: return false
        }
    }
}
