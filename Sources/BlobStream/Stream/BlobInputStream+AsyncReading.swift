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
        var signal: ChangeSignal?
        defer { if signal != nil { observeChanges(nil) } }
        while true {
            if Task.isCancelled { throw cancel() }
            signal?.reset()
            let count = readAsynchronously(into: buffer)
            if count >= 0 { return count }
            let error = blobError
            let mustWait = streamStatus == .opening || error?.isWouldBlock == true
            guard mustWait else { throw Task.isCancelled ? cancel() : error ?? .closed }
            if runQueuedRefillHere() { continue }
            guard let waiting = signal else {
                // First wait: listen from now on, and look once more before waiting, so a change
                // between the read and the registration is not missed.
                let made = ChangeSignal()
                observeChanges { made.signal() }
                signal = made
                continue
            }
            nonisolated(unsafe) let stream = self
            await waiting.wait(isolation: isolation) { stream.close() }
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
            stream.close()
        }
        if count >= 0 { return count }
        throw Task.isCancelled ? cancel() : blobError ?? .closed
    }

    /// Closes the stream because the task was cancelled; returns the error to throw.
    private func cancel() -> CancellationError {
        close()
        return CancellationError()
    }
}
