import BlobStream
import Dispatch
import Foundation
import Synchronization

/// Fills one reusable buffer of chunk size with the bytes of an ``UploadSource`` at any
/// offset — the body of every PATCH. Never a temporary file; memory is one chunk.
///
/// The whole chunk is read *before* its request starts: a stream whose source is itself an
/// HTTP transfer then never has to be read from URLSession's own queue, where waiting for
/// that transfer would deadlock.
///
/// Blocking stream calls run on a private serial queue, never on the caller's thread, so
/// `async` callers do not tie up Swift's cooperative pool. The methods are called one at a
/// time by one upload.
final class ChunkReader: @unchecked Sendable {
    let source: UploadSource
    let chunkSize: Int
    private let queue = DispatchQueue(label: "BlobUpload.ChunkReader")
    private let interrupter = Interrupter()

    // Touched only on `queue`.
    private let buffer: UnsafeMutableRawBufferPointer
    /// The offset of `buffer[0]`; the buffer holds `[bufferStart, bufferStart + bufferCount)`.
    private var bufferStart: Int64 = 0
    private var bufferCount = 0
    private var stream: InputStream?
    /// The offset of the next byte `stream` yields; always `bufferStart + bufferCount`
    /// once a chunk is prepared.
    private var streamOffset: Int64 = 0
    private var total: Int64?

    init(source: UploadSource, chunkSize: Int) {
        self.source = source
        self.chunkSize = max(1, chunkSize)
        buffer = .allocate(byteCount: self.chunkSize, alignment: 16)
    }

    deinit {
        stream?.close()
        buffer.deallocate()
    }

    /// Opens a stream at `offset` and returns the source's length: the declared one, or the
    /// one the opened ``BlobInputStream`` reports.
    func start(at offset: Int64) async throws(BlobUploadError) -> Int64 {
        try await onQueue { reader throws(BlobUploadError) in
            try reader.reposition(to: offset)
            let length = reader.source.length ?? (reader.stream as? BlobInputStream)?.length
            guard let length else { throw .lengthUnknown(source: reader.source.name) }
            reader.total = length
            return length
        }
    }

    /// Makes the buffer hold the chunk that starts at `offset`: up to `chunkSize` bytes, fewer
    /// only at the end of the source. Bytes already in the buffer are kept (after a partial
    /// PATCH the server's offset is usually inside the chunk just sent); otherwise the stream
    /// is re-positioned, reopened if it has to go back.
    func prepareChunk(at offset: Int64) async throws(BlobUploadError) {
        try await onQueue { reader throws(BlobUploadError) in try reader.prepare(at: offset) }
    }

    /// The prepared chunk. A copy when `copying`: URLSession copies an upload body only when
    /// its task is created, on another queue, possibly after a cancelled caller has moved on
    /// and this buffer is refilled or freed. Otherwise the bytes are shared with the buffer,
    /// valid until the next call of this reader — for a transport that is done with a body
    /// when its call returns.
    func chunkData(copying: Bool) -> Data {
        let bytes = UnsafeRawBufferPointer(rebasing: buffer.prefix(bufferCount))
        guard !copying, let base = bytes.baseAddress else { return Data(bytes) }
        return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
    }

    /// The `Upload-Checksum` value of the prepared chunk: algorithm name and base64 digest.
    func checksum(_ algorithm: ChecksumAlgorithm) async -> String {
        let reader = self
        return await withCheckedContinuation { continuation in
            queue.async {
                var checksum = algorithm.makeChecksum()
                checksum.update(UnsafeRawBufferPointer(rebasing: reader.buffer.prefix(reader.bufferCount)))
                continuation.resume(returning: "\(algorithm.name) \(checksum.finalize().base64)")
            }
        }
    }

    /// Closes the current stream; the next chunk opens a new one.
    func close() async {
        let reader = self
        await withCheckedContinuation { continuation in
            queue.async {
                reader.stream?.close()
                reader.stream = nil
                continuation.resume()
            }
        }
    }

    // MARK: On the queue

    private func onQueue<T: Sendable>(
        _ work: @escaping @Sendable (ChunkReader) throws(BlobUploadError) -> T
    ) async throws(BlobUploadError) -> T {
        let reader = self
        let interrupter = self.interrupter
        let result: Result<T, BlobUploadError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    continuation.resume(returning: Result { () throws(BlobUploadError) -> T in
                        if Task.isCancelled { throw .cancelled }
                        return try work(reader)
                    })
                }
            }
        } onCancel: {
            interrupter.interrupt()
        }
        return try result.get()
    }

    private func prepare(at offset: Int64) throws(BlobUploadError) {
        guard let total else { throw .lengthUnknown(source: source.name) }
        let end = min(offset + Int64(chunkSize), total)
        let held = bufferStart + Int64(bufferCount)
        if stream != nil, streamOffset == held, offset >= bufferStart, offset <= held {
            let keep = Int(held - offset)
            if offset > bufferStart, keep > 0, let base = buffer.baseAddress {
                memmove(base, base + Int(offset - bufferStart), keep)
            }
            bufferStart = offset
            bufferCount = keep
        } else {
            try reposition(to: offset)
        }
        while bufferStart + Int64(bufferCount) < end {
            let wanted = Int(end - (bufferStart + Int64(bufferCount)))
            let slot = UnsafeMutableRawBufferPointer(rebasing: buffer[bufferCount..<(bufferCount + wanted)])
            bufferCount += try read(into: slot, expectedLength: total)
        }
    }

    /// Leaves `stream` yielding the byte at `offset` next, with an empty buffer there.
    private func reposition(to offset: Int64) throws(BlobUploadError) {
        bufferStart = offset
        bufferCount = 0
        if let current = stream, streamOffset != offset {
            if let blob = current as? BlobInputStream, blob.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) {
                streamOffset = offset
            } else if streamOffset > offset {
                closeStream()
            }
        }
        if stream == nil {
            let positioned = try source.stream(at: offset)
            stream = positioned.stream
            streamOffset = positioned.startOffset
            interrupter.watch(positioned.stream)
            positioned.stream.open()
            if positioned.stream.streamStatus == .error {
                let failure = streamFailure(positioned.stream, at: positioned.startOffset)
                closeStream()
                throw failure
            }
        }
        // Skip forward (plain streams cannot seek): read into the buffer and drop.
        while streamOffset < offset {
            let wanted = Int(min(offset - streamOffset, Int64(buffer.count)))
            _ = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), expectedLength: total)
        }
        bufferCount = 0
    }

    /// One read into `slot`; returns the count (more than zero) or throws.
    private func read(into slot: UnsafeMutableRawBufferPointer, expectedLength: Int64?) throws(BlobUploadError) -> Int {
        guard let stream, let base = slot.baseAddress else { throw .source(.notOpen) }
        if interrupter.isInterrupted { throw .cancelled }
        let count = stream.read(base.assumingMemoryBound(to: UInt8.self), maxLength: slot.count)
        if count > 0 {
            streamOffset += Int64(count)
            return count
        }
        if interrupter.isInterrupted { throw .cancelled }
        let failure: BlobUploadError = count == 0
            ? .source(.unexpectedEnd(resource: source.name, offset: streamOffset, expectedLength: expectedLength ?? streamOffset))
            : streamFailure(stream, at: streamOffset)
        closeStream()
        throw failure
    }

    private func streamFailure(_ stream: InputStream, at offset: Int64) -> BlobUploadError {
        if let blob = stream as? BlobInputStream, let error = blob.blobError {
            return .source(error)
        }
        let reason = stream.streamError?.localizedDescription ?? "the stream failed"
        return .source(.sourceFailed(resource: source.name, reason: "\(reason) (at offset \(offset))"))
    }

    private func closeStream() {
        stream?.close()
        stream = nil
        interrupter.watch(nil)
    }
}

/// Lets task cancellation stop a read that is blocked in a ``BlobInputStream``: its `close()`
/// may be called from any thread and makes a waiting read return at once. A plain
/// `InputStream` promises no such thing, so it is only checked between reads.
private final class Interrupter: @unchecked Sendable {
    private let lock = NSLock()
    private var interrupted = false
    private var blob: BlobInputStream?

    var isInterrupted: Bool { lock.withLock { interrupted } }

    func watch(_ stream: InputStream?) {
        lock.withLock { blob = stream as? BlobInputStream }
    }

    func interrupt() {
        let target = lock.withLock { () -> BlobInputStream? in
            interrupted = true
            return blob
        }
        target?.close()
    }
}
