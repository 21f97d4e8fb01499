import BlobStream
import Foundation

/// What draining a stream produced: its bytes, and the error that stopped it (if any).
struct StreamDrain {
    var bytes: [UInt8] = []
    var error: BlobStreamError?
    var finished = false
}

/// Opens `stream` (synchronous mode) and reads it to the end or the first error with reads of
/// `readSize` bytes.
func drainSynchronously(_ stream: BlobInputStream, readSize: Int) -> StreamDrain {
    var drain = StreamDrain()
    stream.open()
    defer { stream.close() }
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: readSize)
    defer { buffer.deallocate() }
    while true {
        let count = stream.read(buffer, maxLength: readSize)
        if count > 0 {
            drain.bytes.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count))
        } else {
            drain.finished = count == 0
            drain.error = count < 0 ? stream.blobError : nil
            return drain
        }
    }
}

/// Reads an asynchronous stream from its delegate queue, as events arrive, until the end or an
/// error; ``wait(timeout:)`` returns what was read.
final class AsynchronousDrainer: NSObject, StreamDelegate, @unchecked Sendable {
    private let condition = NSCondition()
    private var drain = StreamDrain()
    private var done = false
    private let readSize: Int
    private let buffer: UnsafeMutablePointer<UInt8>

    init(readSize: Int) {
        self.readSize = readSize
        buffer = .allocate(capacity: readSize)
    }

    deinit {
        buffer.deallocate()
    }

    /// Starts draining `stream` (asynchronous mode) on a private delegate queue.
    func start(_ stream: BlobInputStream) {
        stream.delegate = self
        stream.delegateQueue = DispatchQueue(label: "asset-test-delegate")
        stream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let stream = aStream as? BlobInputStream else { return }
        switch eventCode {
        case .hasBytesAvailable:
            while stream.hasBytesAvailable {
                let count = stream.read(buffer, maxLength: readSize)
                guard count > 0 else { break }
                condition.withLock { drain.bytes.append(contentsOf: UnsafeBufferPointer(start: buffer, count: count)) }
            }
        case .endEncountered:
            finish(error: nil)
        case .errorOccurred:
            finish(error: stream.blobError)
        default:
            break
        }
    }

    private func finish(error: BlobStreamError?) {
        condition.withLock {
            drain.error = error
            drain.finished = error == nil
            done = true
            condition.broadcast()
        }
    }

    /// Waits for the end or an error; `nil` when neither came within `timeout` seconds.
    func wait(timeout: TimeInterval = 30) -> StreamDrain? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while !done {
                if !condition.wait(until: deadline) && !done { return nil }
            }
            return drain
        }
    }
}
