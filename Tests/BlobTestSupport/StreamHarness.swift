import BlobStream
import Foundation

/// What reading a stream produced: its bytes, and the error that stopped it, if any.
public struct StreamDrain: Sendable {
    /// Every byte read, in order.
    public var bytes: [UInt8] = []
    /// The stream's error when it failed; `nil` when it reached the end.
    public var error: BlobStreamError?
}

/// Reads whole streams the way real consumers do, in either mode.
public enum StreamHarness {
    /// Opens `stream` and reads it to the end, or to its first error, with reads of `chunk`
    /// bytes: a plain loop for a synchronous stream, delegate events on a dispatch queue for an
    /// asynchronous one. A stream that neither ends nor fails within `timeout` seconds counts as
    /// failed with a time-out.
    public static func drain(_ stream: BlobInputStream, chunk: Int = 64 * 1024, timeout: TimeInterval = 120) -> StreamDrain {
        switch stream.mode {
        case .synchronous: return drainSynchronously(stream, chunk: chunk)
        case .asynchronous: return drainWithEvents(stream, chunk: chunk, timeout: timeout)
        }
    }

    /// ``drain(_:chunk:timeout:)``, throwing the stream's error instead of returning it.
    public static func readAll(_ stream: BlobInputStream, chunk: Int = 64 * 1024, timeout: TimeInterval = 120) throws -> [UInt8] {
        let result = drain(stream, chunk: chunk, timeout: timeout)
        if let error = result.error { throw error }
        return result.bytes
    }

    private static func drainSynchronously(_ stream: BlobInputStream, chunk: Int) -> StreamDrain {
        stream.open()
        defer { stream.close() }
        var result = StreamDrain()
        var buffer = [UInt8](repeating: 0, count: chunk)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: chunk)
            if count <= 0 { break }
            result.bytes.append(contentsOf: buffer[0..<count])
        }
        if stream.streamStatus != .atEnd {
            result.error = stream.blobError
                ?? .sourceFailed(resource: stream.dataSource.resourceName, reason: "stopped before the end: \(stream.streamStatus)")
        }
        return result
    }

    private static func drainWithEvents(_ stream: BlobInputStream, chunk: Int, timeout: TimeInterval) -> StreamDrain {
        let reader = EventDrain(chunk: chunk)
        stream.delegate = reader
        stream.delegateQueue = DispatchQueue(label: "StreamHarness.events")
        stream.open()
        defer { stream.close() }
        guard reader.finished.wait(timeout: .now() + timeout) == .success else {
            stream.close()
            var result = reader.result
            result.error = .timedOut(resource: stream.dataSource.resourceName, operation: "read with events", seconds: timeout)
            return result
        }
        return reader.result
    }
}

private final class EventDrain: NSObject, StreamDelegate, @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var drained = StreamDrain()
    private var buffer: [UInt8]
    private var done = false

    init(chunk: Int) {
        buffer = [UInt8](repeating: 0, count: chunk)
    }

    var result: StreamDrain { lock.withLock { drained } }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let stream = aStream as? BlobInputStream else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        switch eventCode {
        case .hasBytesAvailable:
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count > 0 {
                drained.bytes.append(contentsOf: buffer[0..<count])
            } else if count < 0, stream.streamStatus == .error {
                finish(error: stream.blobError)
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
        done = true
        drained.error = error
        finished.signal()
    }
}
