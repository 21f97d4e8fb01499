import BlobStream
import Foundation

/// Lets task cancellation stop a read that is blocked in a stream that may be closed from any
/// thread (``PositionedInputStream/closesFromAnyThread``): that `close()` makes a waiting read
/// return at once. Other streams promise no such thing, so they are only checked between reads.
final class Interrupter: @unchecked Sendable {
    private let lock = NSLock()
    private var interrupted = false
    private var closable: InputStream?

    var isInterrupted: Bool { lock.withLock { interrupted } }

    func watch(_ stream: InputStream?) {
        let closable = (stream as? any PositionedInputStream)?.closesFromAnyThread == true ? stream : nil
        lock.withLock { self.closable = closable }
    }

    func interrupt() {
        let target = lock.withLock { () -> InputStream? in
            interrupted = true
            return closable
        }
        target?.close()
    }
}
