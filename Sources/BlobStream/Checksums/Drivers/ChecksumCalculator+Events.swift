import Foundation

// The asynchronous path: the second listing of the POSBlobInputStream article. The calculator
// becomes the stream's delegate and reads whenever it hears `.hasBytesAvailable`, so no thread
// waits for a slow source. Linux Foundation's own streams never send events, so streams other
// than an asynchronous BlobInputStream are read with blocking reads on a queue instead.

extension ChecksumCalculator {
    /// Starts hashing `stream` in the background and calls `completion` exactly once with the
    /// digest or the failure.
    ///
    /// An asynchronous ``BlobInputStream`` (directly or inside a ``HashingInputStream``) is
    /// driven by its events delivered per `delivery`; it must not have been opened yet. Any
    /// other stream is read with blocking reads on the `delivery` queue (or a global queue when
    /// `delivery` is a run loop, which must never block).
    /// - Parameters:
    ///   - stream: The stream to hash.
    ///   - delivery: Where events (and so `progress` and `completion`) arrive.
    ///   - progress: Called after every read with the bytes hashed so far.
    ///   - completion: Called once with the outcome: on the delivery queue or run loop, on the
    ///     thread that called ``cancel()``, or before this method returns when the calculation
    ///     cannot begin (the calculator was used before or already cancelled).
    public func start(
        _ stream: InputStream,
        delivery: Delivery,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: @escaping @Sendable (Result<ChecksumDigest, BlobStreamError>) -> Void
    ) {
        guard let source = stream.eventDrivingStream else {
            readInBackground(stream, delivery: delivery, progress: progress, completion: completion)
            return
        }
        do throws(BlobStreamError) {
            try claim(stream)
            guard stream.streamStatus == .notOpen else {
                throw BlobStreamError.sourceFailed(
                    resource: stream.blobResourceName,
                    reason: "an asynchronous stream must reach the calculator unopened, or its first events are lost"
                )
            }
        } catch {
            lock.withLock { phase = .finished }
            completion(.failure(error))
            return
        }
        let run = EventRun(
            stream: stream, source: source, checksum: algorithm.makeChecksum(), bufferSize: bufferSize,
            progress: progress, completion: completion, calculator: self
        )
        lock.withLock { eventRun = run }
        source.delegate = self
        switch delivery {
        case .queue(let queue):
            source.delegateQueue = queue
        case .runLoop(let runLoop, let mode):
            source.schedule(in: runLoop, forMode: mode)
            run.scheduledRunLoop = (runLoop, mode)
        }
        stream.open()
    }

    /// The digest of `stream`, computed as ``start(_:delivery:progress:completion:)`` does.
    /// Cancelling the task cancels the calculation.
    /// - Parameters:
    ///   - stream: The stream to hash.
    ///   - delivery: Where events arrive; when `nil`, a private serial queue on the threads
    ///     every stream shares (so many calculations at once do not cost a thread each).
    ///   - progress: Called after every read with the bytes hashed so far; with no `delivery`,
    ///     on a thread the library shares among streams, so it must not block.
    /// - Throws: As ``digest(of:progress:)``.
    public func digest(
        of stream: InputStream,
        delivery: Delivery? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(BlobStreamError) -> ChecksumDigest {
        // Serial, but on the streams' shared threads: a private queue of the default kind would
        // get an overcommitted thread of its own whenever many calculations run at once.
        let target = delivery ?? .queue(DispatchQueue(label: "BlobStream.ChecksumCalculator", target: SharedWorkQueues.next()))
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<ChecksumDigest, BlobStreamError>, Never>) in
                start(stream, delivery: target, progress: progress) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            cancel()
        }
        return try outcome.get()
    }

    /// Receives the stream's events; part of `StreamDelegate`, not for direct calls.
    public func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let run = lock.withLock({ phase == .running ? eventRun : nil }) else { return }
        switch eventCode {
        case .openCompleted:
            run.total = run.stream.knownRemainingLength
        case .hasBytesAvailable, .endEncountered:
            drain(run)
        case .errorOccurred:
            finish(run, .failure(failure(of: run.stream, afterBytes: run.done)))
        default:
            break
        }
    }

    // MARK: Internals

    /// Reads what can be read without waiting; finishes at the end or on an error.
    private func drain(_ run: EventRun) {
        let room = UnsafeMutableRawBufferPointer(start: run.buffer, count: run.bufferSize)
        let stop = run.stream.readLoop(into: room, waitsForEvents: true, stopped: { lock.withLock { phase != .running } }) { bytes in
            run.checksum.update(bytes)
            run.done += Int64(bytes.count)
            reportProgress(run.progress, done: run.done, total: run.total)
            return room
        }
        switch stop {
        case .waiting, .stopped: return
        case .end, .filled, .failed:
            if let error = failure(of: run.stream, after: stop, bytes: run.done) {
                finish(run, .failure(error))
            } else {
                finish(run, .success(run.checksum.finalize()))
            }
        }
    }

    /// Reports `result` once: detaches from the stream, closes it and calls the completion.
    private func finish(_ run: EventRun, _ result: Result<ChecksumDigest, BlobStreamError>) {
        let completion: EventRun.Completion? = lock.withLock {
            guard phase == .running, eventRun === run else { return nil }
            phase = .finished
            eventRun = nil
            activeStream = nil
            return run.takeCompletion()
        }
        guard let completion else { return }
        run.detach()
        completion(result)
    }

    /// The blocking loop on a queue, for streams that send no events.
    private func readInBackground(
        _ stream: InputStream,
        delivery: Delivery,
        progress: (@Sendable (TransferProgress) -> Void)?,
        completion: @escaping @Sendable (Result<ChecksumDigest, BlobStreamError>) -> Void
    ) {
        let queue: DispatchQueue
        switch delivery {
        case .queue(let target): queue = target
        case .runLoop: queue = DispatchQueue.global(qos: .utility)
        }
        nonisolated(unsafe) let stream = stream
        queue.async { [self] in
            let result: Result<ChecksumDigest, BlobStreamError>
            do throws(BlobStreamError) {
                result = .success(try digest(of: stream, progress: progress))
            } catch {
                result = .failure(error)
            }
            completion(result)
        }
    }

    /// Blocks until an event-driven calculation on a private queue is done.
    func waitForEvents(
        of stream: InputStream,
        progress: ((TransferProgress) -> Void)?
    ) throws(BlobStreamError) -> ChecksumDigest {
        let outcome = Handoff<Result<ChecksumDigest, BlobStreamError>>()
        nonisolated(unsafe) let progress = progress
        start(stream, delivery: .queue(DispatchQueue(label: "BlobStream.ChecksumCalculator"))) { report in
            progress?(report)
        } completion: { result in
            outcome.set(result)
        }
        return try outcome.wait().get()
    }
}

/// The state of one event-driven calculation, touched only by its serial event deliveries
/// (and `completion`, under the calculator's lock).
final class EventRun: @unchecked Sendable {
    typealias Completion = @Sendable (Result<ChecksumDigest, BlobStreamError>) -> Void

    let stream: InputStream
    let source: BlobInputStream
    var checksum: any Checksum
    let buffer: UnsafeMutableRawPointer
    let bufferSize: Int
    let progress: (@Sendable (TransferProgress) -> Void)?
    private var completion: Completion?
    /// Keeps the calculator alive while the stream holds it only weakly as its delegate.
    private var calculator: ChecksumCalculator?
    var done: Int64 = 0
    var total: Int64?
    var scheduledRunLoop: (RunLoop, RunLoop.Mode)?

    init(
        stream: InputStream, source: BlobInputStream, checksum: any Checksum, bufferSize: Int,
        progress: (@Sendable (TransferProgress) -> Void)?, completion: @escaping Completion,
        calculator: ChecksumCalculator
    ) {
        self.stream = stream
        self.source = source
        self.checksum = checksum
        self.bufferSize = bufferSize
        self.buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 64)
        self.progress = progress
        self.completion = completion
        self.calculator = calculator
    }

    deinit {
        buffer.deallocate()
    }

    /// The completion, once; later calls return `nil`.
    func takeCompletion() -> Completion? {
        defer { completion = nil; calculator = nil }
        return completion
    }

    /// Stops events and closes the stream.
    func detach() {
        stream.close()
        source.delegate = nil
        if let (runLoop, mode) = scheduledRunLoop {
            source.remove(from: runLoop, forMode: mode)
        }
    }
}

extension BlobStreamError {
    var isWouldBlock: Bool {
        if case .wouldBlock = self { return true }
        return false
    }
}
