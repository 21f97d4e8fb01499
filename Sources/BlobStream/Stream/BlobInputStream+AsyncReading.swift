import Foundation

/// `read` for `async` code that wants neither delegates nor ``BlobChunks``.
extension BlobInputStream {
    /// Reads up to `buffer.count` bytes into `buffer`, suspending the task (not blocking a
    /// thread) until at least one byte is there, and opening the stream first if it is not open.
    ///
    /// In asynchronous mode nothing blocks: the task waits for the stream's own background
    /// reads. In synchronous mode the blocking read runs on a thread outside Swift's cooperative
    /// pool, which it occupies while it waits; prefer asynchronous mode for async code.
    ///
    /// Cancelling the task closes the stream (a waiting read stops at once) and throws
    /// `CancellationError`. Only one read may run at a time, and not together with a
    /// ``BlobChunks`` over the same stream.
    /// - Returns: The number of bytes read, or 0 at the real end of data.
    /// - Throws: `CancellationError`, or the ``BlobStreamError`` that stopped the stream (the
    ///   same as ``blobError``).
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, isolation: isolated (any Actor)? = #isolation
    ) async throws -> Int {
        guard buffer.count > 0 else { return 0 }
        if streamStatus == .notOpen { open() }
        switch mode {
        case .synchronous: return try await readOnAnotherThread(into: buffer, isolation: isolation)
        case .asynchronous: return try await readWhenAvailable(into: buffer, isolation: isolation)
        }
    }

    private func readWhenAvailable(
        into buffer: UnsafeMutableRawBufferPointer, isolation: isolated (any Actor)?
    ) async throws -> Int {
        let signal = ChangeSignal()
        var listening = false
        defer { if listening { observeChanges(nil) } }
        return try await untilProgress(signal: signal, listening: &listening, isolation: isolation) {
            () throws(BlobStreamError) -> Int? in
            let count = readAsynchronously(into: buffer)
            if count >= 0 { return count }
            let error = blobError
            if error?.isWouldBlock == true { return nil }
            let status = streamStatus
            if status == .opening { return nil }
            // The read looked while the stream was opening; the open completed since: again.
            if error == .notOpen, status == .open || status == .reading { return nil }
            throw error ?? .closed
        }
    }

    /// The asynchronous wait, shared by the async `read` and ``BlobChunks``: tries
    /// `attempt` until it has an answer, suspending the task (never a thread) while the stream
    /// has nothing, and running a queued refill on this thread rather than waiting for one.
    /// Starts listening to the stream's changes at the first wait unless `listening` already,
    /// and looks once more before waiting, so a change meanwhile is not missed. Cancelling the
    /// task closes the stream and throws `CancellationError`; an error `attempt` throws is
    /// thrown as it is (as `CancellationError` once the task is cancelled).
    func untilProgress<T>(
        signal: ChangeSignal, listening: inout Bool, isolation: isolated (any Actor)?,
        _ attempt: () throws(BlobStreamError) -> T?
    ) async throws -> T {
        while true {
            if Task.isCancelled { throw cancel() }
            signal.reset()
            do {
                if let answer = try attempt() { return answer }
            } catch {
                throw Task.isCancelled ? cancel() : error
            }
            if runQueuedRefillHere() { continue }
            guard listening else {
                observeChanges { signal.signal() }
                listening = true
                continue
            }
            nonisolated(unsafe) let stream = self
            await signal.wait(isolation: isolation) { Self.closeOffTheTaskLock(stream) }
        }
    }

    private func readOnAnotherThread(
        into buffer: UnsafeMutableRawBufferPointer, isolation: isolated (any Actor)?
    ) async throws -> Int {
        if Task.isCancelled { throw cancel() }
        nonisolated(unsafe) let stream = self
        nonisolated(unsafe) let destination = buffer
        let count = await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Int, Never>) in
                // A queue of its own: the read blocks its thread, which must not be one of the
                // few shared ones.
                DispatchQueue(label: "BlobInputStream.blockingRead").async {
                    continuation.resume(returning: stream.readSynchronously(into: destination))
                }
            }
        } onCancel: {
            Self.closeOffTheTaskLock(stream)
        }
        if count >= 0 { return count }
        throw Task.isCancelled ? cancel() : blobError ?? .closed
    }

    /// Closes `stream` from a task's cancellation handler, on another thread: the handler runs
    /// with the task's status lock held, and the close takes the stream's lock, which a thread
    /// posting an event holds while it resumes the task (which takes the status lock).
    private static func closeOffTheTaskLock(_ stream: BlobInputStream) {
        nonisolated(unsafe) let stream = stream
        DispatchQueue.global().async { stream.close() }
    }

    /// Closes the stream because the task was cancelled; returns the error to throw.
    private func cancel() -> CancellationError {
        close()
        return CancellationError()
    }
}
