import BlobStream
import Dispatch
import Foundation

/// One `read` of a synchronous stream on a thread of its own, for tests of what wakes a blocked
/// reader: a blocked read must not occupy the concurrency pool that other tests need.
public final class BackgroundRead: Sendable {
    private let result = Locked(0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts reading at most `count` bytes from `stream`.
    public init(_ stream: BlobInputStream, count: Int) {
        let box = Unchecked(stream)
        let result = self.result, finished = self.finished
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: count)
            result.value = box.value.read(&buffer, maxLength: count)
            finished.signal()
        }
    }

    /// What `read` returned, or `nil` when it has not returned within `timeout` seconds.
    public func wait(timeout: TimeInterval) -> Int? {
        finished.wait(timeout: .now() + timeout) == .success ? result.value : nil
    }
}
