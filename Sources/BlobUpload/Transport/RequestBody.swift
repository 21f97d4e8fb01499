import Foundation
internal import HTTP1

/// A request body of known length on the package's own client: bytes in memory, or bytes read
/// while they are sent (``HTTP1ProducedBody``; a tus chunk of a file, see
/// ``TusChunkReader/positionForStreaming(at:)``).
enum RequestBody: Sendable {
    case data(Data)
    /// `count` bytes; `makeBody` starts them from their first byte, on the sending thread, for
    /// every attempt.
    case produced(count: Int, makeBody: @Sendable () -> HTTP1ProducedBody)

    /// The byte count, sent as `Content-Length`.
    var count: Int {
        switch self {
        case .data(let data): data.count
        case .produced(let count, _): count
        }
    }
}
