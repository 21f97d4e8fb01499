import Foundation

/// One iteration of ``BlobChunks``: takes blocks from its asynchronous stream, suspends the task
/// while none is there, and closes the stream when the iteration ends or is dropped.
final class ChunksIteration: @unchecked Sendable {
    private let stream: BlobInputStream
    private let signal = ChangeSignal()
    /// Why the iteration cannot even start, reported by the first `next()`.
    private let refusal: BlobStreamError?
    /// Touched only by `next()`, which an iterator never runs twice at once.
    private var finished = false
    private var listening = false

    init(stream: BlobInputStream) {
        self.stream = stream
        refusal = nil
    }

    init(refusing stream: BlobInputStream, with error: BlobStreamError) {
        self.stream = stream
        refusal = error
    }

    deinit {
        if listening { stream.observeChanges(nil) }
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
        do {
            let chunk = try await stream.untilProgress(signal: signal, listening: &listening, isolation: isolation) {
                () throws(BlobStreamError) -> BlobChunk?? in
                switch stream.takeBlock() {
                case .chunk(let chunk): return .some(chunk)
                case .end: return .some(nil)
                case .failed(let error): throw error
                case .wait: return nil
                }
            }
            if chunk == nil {
                finished = true
                stream.close()
            }
            return chunk
        } catch {
            finished = true
            stream.close()
            throw error
        }
    }
}
