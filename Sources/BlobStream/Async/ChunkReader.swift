import Foundation

/// One iteration of ``BlobChunks``: takes blocks from its asynchronous stream, suspends the task
/// while none is there, and closes the stream when the iteration ends or is dropped.
final class ChunkReader: @unchecked Sendable {
    private let stream: BlobInputStream
    private let signal = ChangeSignal()
    /// Why the iteration cannot even start, reported by the first `next()`.
    private let refusal: BlobStreamError?
    /// Touched only by `next()`, which an iterator never runs twice at once.
    private var finished = false

    init(stream: BlobInputStream) {
        self.stream = stream
        refusal = nil
        let signal = self.signal
        stream.observeChanges { signal.signal() }
    }

    init(refusing stream: BlobInputStream, with error: BlobStreamError) {
        self.stream = stream
        refusal = error
    }

    deinit {
        stream.observeChanges(nil)
        stream.close()
    }

    func next(isolation: isolated (any Actor)?) async throws -> BlobChunk? {
        guard !finished else { return nil }
        if let refusal {
            finished = true
            throw refusal
        }
        if stream.streamStatus == .notOpen { stream.open() }
        let stream = self.stream
        while true {
            if Task.isCancelled { throw finish(with: CancellationError()) }
            signal.reset()
            switch stream.takeBlock() {
            case .chunk(let chunk):
                return chunk
            case .end:
                finished = true
                stream.close()
                return nil
            case .failed(let error):
                throw finish(with: Task.isCancelled ? CancellationError() : error)
            case .wait:
                nonisolated(unsafe) let closing = stream
                await signal.wait(isolation: isolation) { closing.close() }
            }
        }
    }

    /// Ends the iteration: closes the stream and returns `error` to throw.
    private func finish(with error: any Error) -> any Error {
        finished = true
        stream.close()
        return error
    }
}
