import Foundation

extension InputStream {
    /// Whether the stream says it ended: `.atEnd`, or — for a stream that keeps no status
    /// (a plain subclass stays `.notOpen`) — no bytes available while it is neither closed nor
    /// failed. FoundationNetworking ends a body on either, so both uploaders take the same
    /// two as the end, and nothing else: a read of 0 from a stream that still says it has
    /// bytes is no end.
    var saysItEnded: Bool {
        switch streamStatus {
        case .atEnd: return true
        case .closed, .error: return false
        default: return !hasBytesAvailable
        }
    }
}
