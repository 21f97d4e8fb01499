import BlobStream
import Dispatch
import Foundation
import Synchronization

/// Fills reusable buffers of chunk size with the bytes of an ``UploadSource`` at any offset —
/// the bodies of the PATCH requests. Never a temporary file; memory is two chunks, or twice
/// the source's length when that is less.
///
/// The last chunk is complete only once the stream has reported its end (a read of 0 bytes):
/// a ``BlobInputStream`` confirms its source's version before it does, so the final PATCH of
/// a blob rewritten while it was read is never sent. Every stream the reader opens is pinned
/// to the version the first one saw (``VersionPin``): a stream opened after a failure cannot
/// continue the upload with another version.
///
/// A prepared chunk is read whole *before* its request starts: a stream whose source is itself
/// an HTTP transfer then never has to be read from URLSession's own queue, where waiting for
/// that transfer would deadlock. While a chunk is being sent, the next one is read into the
/// second buffer (``prefetchNext()``), so reading the source and sending overlap. A file's
/// chunk on the package's own client is instead read while it is sent, on the request's own
/// thread (``positionForStreaming(at:)``, README "Streamed tus chunks"); its last chunk is
/// always prepared.
///
/// Blocking stream calls run on a private serial queue, or inside it (`sync`) from a request's
/// own thread, never on Swift's cooperative pool. The methods are called one at a time by one
/// upload.
final class TusChunkReader: @unchecked Sendable {
    let source: UploadSource
    let chunkSize: Int
    let queue = DispatchQueue(label: "BlobUpload.TusChunkReader")
    let interrupter = Interrupter()

    /// A buffer and the range of the source it holds.
    struct Slot {
        let buffer: UnsafeMutableRawBufferPointer
        var start: Int64 = 0
        var count = 0
        var end: Int64 { start + Int64(count) }
        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer.prefix(count)) }
    }

    // Touched only on `queue`, except `current`, which the caller reads between calls.
    /// The prepared chunk.
    var current: Slot
    /// The chunk after it, read ahead; it is valid when `prefetched`.
    var spare: Slot
    var prefetched = false
    var stream: InputStream?
    /// The offset of the next byte `stream` yields: the end of `spare` when `prefetched`,
    /// else of `current`, once a chunk is prepared.
    var streamOffset: Int64 = 0
    var total: Int64?

    /// The version every stream must have.
    let pin = VersionPin()
    /// Why the chunk read ahead could not be: kept when another read cannot help.
    var prefetchFailure: BlobUploadError?
    /// Why a chunk read while it was sent stopped (``produce(into:)``).
    var streamFailure: BlobUploadError?

    /// A reader of chunks of `chunkSize` bytes (at least 1); the buffers are allocated by
    /// ``start(at:)``, once the source's length is known.
    init(source: UploadSource, chunkSize: Int) {
        self.source = source
        self.chunkSize = max(1, chunkSize)
        current = Slot(buffer: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        spare = Slot(buffer: UnsafeMutableRawBufferPointer(start: nil, count: 0))
    }

    /// The bytes each buffer holds (test seam).
    var bufferCapacity: Int { current.buffer.count }

    deinit {
        stream?.close()
        free(current.buffer.baseAddress)
        free(spare.buffer.baseAddress)
    }

    /// Opens a stream at `offset`, allocates the buffers, and returns the source's length:
    /// the declared one, or the one the opened ``PositionedInputStream`` reports. A declared
    /// length that a ``PositionedInputStream`` contradicts fails with
    /// ``BlobUploadError/lengthMismatch(url:serverLength:sourceLength:)``; a plain stream that
    /// yields more than it is checked when its last chunk is read. Buffers that cannot be
    /// allocated fail with ``BlobUploadError/invalidOption(name:reason:)``, never a trap.
    func start(at offset: Int64) async throws(BlobUploadError) -> Int64 {
        try await onQueue { reader throws(BlobUploadError) in
            try reader.reposition(to: offset)
            let length = reader.source.length ?? (reader.stream as? any MeasuredStream)?.length
            guard let length else { throw .lengthUnknown(source: reader.source.name) }
            reader.total = length
            try reader.allocateBuffers(for: length)
            return length
        }
    }

    /// Makes the current buffer hold the chunk that starts at `offset`: up to `chunkSize`
    /// bytes, fewer only at the end of the source. The chunk read ahead is used when the
    /// offset falls in it (the usual case: the server took the whole previous chunk); bytes
    /// of the current chunk are kept when it falls there instead (a partial PATCH) and nothing
    /// was read ahead; otherwise the stream is re-positioned, reopened if it has to go back.
    /// Returns the source's length when it is known: always, but for live data, whose length
    /// is known once its end was read (``UploadSource/isLive``).
    @discardableResult
    func prepareChunk(at offset: Int64) async throws(BlobUploadError) -> Int64? {
        try await onQueue { reader throws(BlobUploadError) in
            if reader.source.isLive { return try reader.prepareLive(at: offset) }
            try reader.prepare(at: offset)
            return reader.total
        }
    }

    /// Starts reading the chunk after the prepared one into the second buffer, on the
    /// reader's queue, and returns at once. A failure is not reported here: the next
    /// ``prepareChunk(at:)`` reads again and reports it.
    func prefetchNext() {
        queue.async { [self] in
            if source.isLive { return prefetchLive() }
            guard let total, current.end < total, !prefetched, stream != nil, streamOffset == current.end else { return }
            spare.start = current.end
            spare.count = 0
            do throws(BlobUploadError) {
                try fill(&spare, to: chunkEnd(from: current.end, limit: total))
                prefetched = true
            } catch {
                spare.count = 0
                // Another version stays another version; other failures may pass on a re-read.
                if case .source(.sourceChanged) = error { prefetchFailure = error }
            }
        }
    }

    /// The prepared chunk. A copy when `copying`: URLSession copies an upload body only when
    /// its task is created, on another queue, possibly after a cancelled caller has moved on
    /// and this buffer is refilled or freed. Otherwise the bytes are shared with the buffer,
    /// valid until the next ``prepareChunk(at:)`` — for a transport that is done with a body
    /// when its call returns.
    func chunkData(copying: Bool) -> Data {
        let bytes = current.bytes
        guard !copying, let base = bytes.baseAddress else { return Data(bytes) }
        return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
    }

    /// The `Upload-Checksum` value of the prepared chunk: algorithm name and base64 digest.
    func checksum(_ algorithm: ChecksumAlgorithm) async -> String {
        let reader = self
        return await withBlockingWork(at: .queue(queue), onCancel: {}) {
            var checksum = algorithm.makeChecksum()
            checksum.update(reader.current.bytes)
            return "\(algorithm.name) \(checksum.finalize().base64)"
        }
    }

    /// Stops the reader at once, from any thread, for an upload that failed or was cancelled:
    /// a read blocked in a stream that may be closed from any thread returns (a read ahead
    /// could otherwise go on pulling live data), and no later read starts.
    func interrupt() {
        interrupter.interrupt()
    }

    /// Closes the current stream; the next chunk opens a new one.
    func close() async {
        let reader = self
        await withBlockingWork(at: .queue(queue), onCancel: {}) { reader.closeStream() }
    }

    // MARK: On the queue

    func onQueue<T: Sendable>(
        _ work: @escaping @Sendable (TusChunkReader) throws(BlobUploadError) -> T
    ) async throws(BlobUploadError) -> T {
        let reader = self
        let interrupter = self.interrupter
        let result = await withBlockingWork(at: .queue(queue), onCancel: interrupter.interrupt) {
            Result { () throws(BlobUploadError) -> T in try work(reader) }
        }
        // A live source's producer that failed is the cause of whatever failed after it.
        return try result.mapError(source.explaining).get()
    }

    private func prepare(at offset: Int64) throws(BlobUploadError) {
        guard let total else { throw .lengthUnknown(source: source.name) }
        if let prefetchFailure { throw prefetchFailure }
        if prefetched, offset >= spare.start, offset <= spare.end {
            swap(&current, &spare)
            prefetched = false
            keep(from: offset)
        } else if !prefetched, stream != nil, streamOffset == current.end, offset >= current.start, offset <= current.end {
            keep(from: offset)
        } else {
            try reposition(to: offset)
        }
        try fill(&current, to: chunkEnd(from: offset, limit: total))
    }

    /// Where the chunk that starts at `offset` ends: `chunkSize` bytes on, but not past `limit`
    /// (the source's length, when known) nor `Int64.max`. Never `offset + chunkSize` as such: a
    /// source may claim a length near `Int64.max` (an HTTP server chooses its `Content-Length`)
    /// and a server an offset near it, and that sum would trap.
    func chunkEnd(from offset: Int64, limit: Int64?) -> Int64 {
        let (sum, overflow) = offset.addingReportingOverflow(Int64(chunkSize))
        let end = overflow ? Int64.max : sum
        return limit.map { min(end, $0) } ?? end
    }

    /// Drops the bytes of `current` before `offset`, which lies in it.
    func keep(from offset: Int64) {
        let kept = Int(current.end - offset)
        if offset > current.start, kept > 0, let base = current.buffer.baseAddress {
            memmove(base, base + Int(offset - current.start), kept)
        }
        current.start = offset
        current.count = kept
    }
    /// Gives both buffers room for a chunk of a source of `length` bytes, no more than it has.
    func allocateBuffers(for length: Int64) throws(BlobUploadError) {
        let capacity = Int(min(Int64(chunkSize), max(length, 1)))
        guard current.buffer.count < capacity else { return }
        free(current.buffer.baseAddress)
        free(spare.buffer.baseAddress)
        current = Slot(buffer: UnsafeMutableRawBufferPointer(start: nil, count: 0))
        spare = current
        // malloc, unlike `allocate`, reports a failure instead of trapping.
        let first = malloc(capacity), second = malloc(capacity)
        guard let first, let second else {
            free(first)
            free(second)
            throw .invalidOption(name: "chunkSize", reason: "two buffers of \(capacity) bytes cannot be allocated")
        }
        current = Slot(buffer: UnsafeMutableRawBufferPointer(start: first, count: capacity))
        spare = Slot(buffer: UnsafeMutableRawBufferPointer(start: second, count: capacity))
    }
}
