import BlobStream
import Foundation

/// Reads whole streams the way real consumers do, in either mode.
public enum StreamHarness {
    /// Opens `stream` and reads it to the end with reads of `chunk` bytes: a plain loop for a
    /// synchronous stream, delegate events on a dispatch queue for an asynchronous one.
    /// - Throws: the stream's error, or a time-out after `timeout` seconds.
    public static func readAll(_ stream: BlobInputStream, chunk: Int = 64 * 1024, timeout: TimeInterval = 120) throws -> [UInt8] {
        switch stream.mode {
        case .synchronous: return try readSynchronously(stream, chunk: chunk)
        case .asynchronous: return try readWithEvents(stream, chunk: chunk, timeout: timeout)
        }
    }

    private static func readSynchronously(_ stream: BlobInputStream, chunk: Int) throws -> [UInt8] {
        stream.open()
        defer { stream.close() }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: chunk)
            if count < 0 { throw stream.blobError ?? BlobStreamError.sourceFailed(resource: "stream", reason: "-1 without error") }
            if count == 0 { break }
            output.append(contentsOf: buffer[0..<count])
        }
        guard stream.streamStatus == .atEnd else {
            throw stream.blobError ?? BlobStreamError.sourceFailed(resource: "stream", reason: "stopped before the end: \(stream.streamStatus)")
        }
        return output
    }

    private static func readWithEvents(_ stream: BlobInputStream, chunk: Int, timeout: TimeInterval) throws -> [UInt8] {
        let reader = EventReader(chunk: chunk)
        stream.delegate = reader
        stream.delegateQueue = DispatchQueue(label: "StreamHarness.events")
        stream.open()
        defer { stream.close() }
        guard reader.finished.wait(timeout: .now() + timeout) == .success else {
            throw BlobStreamError.timedOut(resource: stream.dataSource.resourceName, operation: "read with events", seconds: timeout)
        }
        if let error = reader.error { throw error }
        return reader.output
    }
}

private final class EventReader: NSObject, StreamDelegate, @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    private(set) var output: [UInt8] = []
    private(set) var error: BlobStreamError?
    private var buffer: [UInt8]
    private var done = false

    init(chunk: Int) {
        buffer = [UInt8](repeating: 0, count: chunk)
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard !done, let stream = aStream as? BlobInputStream else { return }
        switch eventCode {
        case .hasBytesAvailable:
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count > 0 {
                output.append(contentsOf: buffer[0..<count])
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
        self.error = error
        finished.signal()
    }
}
