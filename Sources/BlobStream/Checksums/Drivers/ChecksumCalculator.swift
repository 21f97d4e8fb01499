import Foundation

/// Computes the digest of everything an `InputStream` delivers, without holding the blob in
/// memory: synchronously on the caller's thread, or asynchronously, driven by the stream's
/// delegate events on a run loop or a dispatch queue.
///
/// ```swift
/// let stream = BlobInputStream(fileAtPath: path)
/// let digest = try ChecksumCalculator(algorithm: .sha256).digest(of: stream)
/// ```
///
/// ## Contract
/// - A calculator computes one digest: create one per stream. Using it a second time fails
///   with ``BlobStreamError/sourceFailed(resource:reason:)``.
/// - It opens the stream if it is not open yet, reads it to its end and closes it, whatever
///   the outcome. Bytes are hashed from the stream's current position (set
///   `.fileCurrentOffsetKey` before opening to skip a prefix).
/// - It never returns a digest of partial data: a read error fails with the stream's error in
///   typed form (``BlobInputStream/blobError``, or the mapped `streamError` of other streams),
///   and a stream that stops before its status is `.atEnd` fails too.
/// - ``cancel()`` may be called from any thread at any time, also before the calculation
///   starts; the calculation then fails with ``BlobStreamError/cancelled``.
/// - Progress handlers run on the thread that reads: the caller's thread for ``digest(of:progress:)``,
///   the event thread or queue for ``start(_:delivery:progress:completion:)``. None runs after
///   the outcome has been reported.
public final class ChecksumCalculator: NSObject, StreamDelegate, @unchecked Sendable {
    /// Where an asynchronous calculation receives the stream's events.
    public enum Delivery {
        /// On `queue` (through ``BlobInputStream/delegateQueue``).
        case queue(DispatchQueue)
        /// On `runLoop`'s thread while it runs in `mode`; the caller keeps it running.
        case runLoop(RunLoop, mode: RunLoop.Mode)
    }

    /// The algorithm computed.
    public let algorithm: ChecksumAlgorithm
    /// The most bytes asked of the stream per read.
    public let bufferSize: Int

    enum Phase { case unused, running, finished }

    /// Guards the fields below. Recursive, because a progress handler (called with it held, so
    /// that none runs after the outcome) may call ``cancel()``.
    let lock = NSRecursiveLock()
    var phase = Phase.unused
    var cancelRequested = false
    /// The stream being read, so that ``cancel()`` can close it to wake a blocked read.
    var activeStream: InputStream?
    /// Set while an event-driven calculation runs.
    var eventRun: EventRun?

    /// Creates a calculator.
    /// - Parameters:
    ///   - algorithm: What to compute; SHA-256 by default.
    ///   - bufferSize: The most bytes to read at once (1 MiB by default, at least 4 KiB). Reads
    ///     this large let a ``BlobInputStream`` copy straight from its source into the buffer.
    public init(algorithm: ChecksumAlgorithm = .sha256, bufferSize: Int = 1 << 20) {
        self.algorithm = algorithm
        self.bufferSize = max(4096, bufferSize)
    }

    // MARK: Synchronous

    /// Reads `stream` to its end on the calling thread and returns the digest of the bytes read.
    ///
    /// Follows the synchronous listing of the POSBlobInputStream article: open, read while bytes
    /// are available, require `.atEnd`. Every stream call happens on this thread; for streams
    /// longer than four buffers, hashing runs on a helper thread, a buffer or two behind the
    /// reads, so that reading and hashing overlap. An asynchronous ``BlobInputStream`` is driven
    /// by its events on a private queue while this thread waits.
    /// - Parameters:
    ///   - stream: The stream to hash, not yet opened or open at the first byte to hash.
    ///   - progress: Called on this thread as hashing advances, with the bytes hashed so far;
    ///     the last call reports every byte.
    /// - Throws: The stream's error, ``BlobStreamError/cancelled`` after ``cancel()``, or
    ///   ``BlobStreamError/sourceFailed(resource:reason:)`` if the stream ends without
    ///   reaching `.atEnd` or the calculator was used before.
    public func digest(
        of stream: InputStream,
        progress: ((TransferProgress) -> Void)? = nil
    ) throws(BlobStreamError) -> ChecksumDigest {
        if stream.eventDrivingStream != nil {
            return try waitForEvents(of: stream, progress: progress)
        }
        try claim(stream)
        let result: Result<ChecksumDigest, BlobStreamError>
        do throws(BlobStreamError) {
            result = .success(try readToEnd(stream, progress: progress))
        } catch {
            result = .failure(error)
        }
        stream.close()
        lock.withLock {
            phase = .finished
            activeStream = nil
        }
        return try result.get()
    }

    /// Cancels the calculation: a blocked read of a ``BlobInputStream`` returns at once (the
    /// stream is closed), other streams stop at the next read. The outcome is
    /// ``BlobStreamError/cancelled``. Does nothing once the outcome has been reported.
    public func cancel() {
        let (stream, run, completion): (InputStream?, EventRun?, EventRun.Completion?) = lock.withLock {
            guard phase != .finished else { return (nil, nil, nil) }
            cancelRequested = true
            guard phase == .running else { return (nil, nil, nil) }
            guard let run = eventRun else { return (activeStream, nil, nil) }
            phase = .finished
            eventRun = nil
            activeStream = nil
            return (run.stream, run, run.takeCompletion())
        }
        if let run {
            run.detach()
        } else if let stream, stream.canCloseFromAnyThread {
            stream.close()
        }
        completion?(.failure(.cancelled))
    }

    // MARK: Shared by both paths

    /// Marks the calculator as running on `stream`, or throws why it cannot start.
    func claim(_ stream: InputStream) throws(BlobStreamError) {
        lock.lock()
        defer { lock.unlock() }
        guard phase == .unused else {
            throw BlobStreamError.sourceFailed(
                resource: stream.blobResourceName,
                reason: "this ChecksumCalculator was used before; create one per digest"
            )
        }
        guard !cancelRequested else {
            phase = .finished
            throw BlobStreamError.cancelled
        }
        phase = .running
        activeStream = stream
    }

    /// Reports `done` bytes unless the outcome is already out.
    func reportProgress(_ progress: ((TransferProgress) -> Void)?, done: Int64, total: Int64?) {
        guard let progress else { return }
        lock.withLock {
            guard phase == .running, !cancelRequested else { return }
            progress(TransferProgress(completedBytes: done, totalBytes: total))
        }
    }

    var isCancelled: Bool { lock.withLock { cancelRequested } }

    /// Why reading `stream` stopped after `done` bytes without reaching its end.
    func failure(of stream: InputStream, afterBytes done: Int64) -> BlobStreamError {
        if isCancelled { return .cancelled }
        if let error = stream.typedError { return error }
        switch stream.streamStatus {
        case .closed:
            return .closed
        case .notOpen, .opening:
            return .notOpen
        default:
            return .sourceFailed(
                resource: stream.blobResourceName,
                reason: "the stream stopped after \(done) bytes without reaching its end"
            )
        }
    }

    /// The blocking loop: open, read while the stream has bytes, require `.atEnd`. Reads stay
    /// on the calling thread; for more than a few buffers' worth, hashing moves to a
    /// ``HashingPipeline`` worker so that reading and hashing overlap.
    func readToEnd(_ stream: InputStream, progress: ((TransferProgress) -> Void)?) throws(BlobStreamError) -> ChecksumDigest {
        if stream.streamStatus == .notOpen { stream.open() }
        guard stream.streamStatus == .open || stream.streamStatus == .atEnd else {
            throw failure(of: stream, afterBytes: 0)
        }
        let total = stream.knownRemainingLength
        if let total, total <= Int64(4 * bufferSize) {
            var checksum = algorithm.makeChecksum()
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 64)
            defer { buffer.deallocate() }
            var done: Int64 = 0
            try readLoop(stream, firstBuffer: buffer) { count in
                checksum.update(UnsafeRawBufferPointer(start: buffer, count: count))
                done += Int64(count)
                reportProgress(progress, done: done, total: total)
                return buffer
            }
            return checksum.finalize()
        }

        let pipeline = HashingPipeline(checksum: algorithm.makeChecksum(), bufferSize: bufferSize)
        var current = pipeline.takeFreeBuffer()
        var reported: Int64 = 0
        func reportHashed() {
            let hashed = pipeline.bytesHashed
            guard hashed > reported else { return }
            reported = hashed
            reportProgress(progress, done: hashed, total: total)
        }
        do throws(BlobStreamError) {
            try readLoop(stream, firstBuffer: current) { count in
                pipeline.submit(current, count: count)
                reportHashed()
                current = pipeline.takeFreeBuffer()
                return current
            }
        } catch {
            pipeline.submit(current, count: 0)
            pipeline.abandon()
            throw error
        }
        pipeline.submit(current, count: 0)
        let digest = pipeline.finish()
        reportHashed()
        return digest
    }

    /// Reads `stream` to its end with blocking reads on the read-and-hash loop
    /// (``Foundation/InputStream/readLoop(into:waitsForEvents:stopped:consume:)``), handing
    /// each read's count to `consume`, which hashes those bytes (or passes the buffer on) and
    /// returns the buffer for the next read; throws ``BlobStreamError/cancelled`` after
    /// ``cancel()``.
    private func readLoop(
        _ stream: InputStream,
        firstBuffer: UnsafeMutableRawPointer,
        consume: (_ count: Int) -> UnsafeMutableRawPointer
    ) throws(BlobStreamError) {
        var done: Int64 = 0
        let size = bufferSize
        let stop = stream.readLoop(into: UnsafeMutableRawBufferPointer(start: firstBuffer, count: size), stopped: { isCancelled }) { bytes in
            done += Int64(bytes.count)
            return UnsafeMutableRawBufferPointer(start: consume(bytes.count), count: size)
        }
        if let error = failure(of: stream, after: stop, bytes: done) { throw error }
    }

    /// Why a calculation that stopped with `stop` after `done` bytes failed, or `nil` when it
    /// reached the stream's end: only the `.atEnd` status is an end, never a read of 0 alone.
    func failure(of stream: InputStream, after stop: ReadLoopStop, bytes done: Int64) -> BlobStreamError? {
        switch stop {
        case .end where stream.streamStatus == .atEnd: return nil
        case .stopped: return .cancelled
        case .end, .filled, .waiting, .failed: return failure(of: stream, afterBytes: done)
        }
    }
}
