/// A blob as an `AsyncSequence` of single bytes, over ``BlobChunks``: for parsers that want one
/// byte at a time. Each byte costs an iterator step where a chunk costs one per block, so
/// prefer the chunks themselves wherever a loop can take a buffer.
public struct BlobBytes: AsyncSequence, Sendable {
    /// A byte of the blob.
    public typealias Element = UInt8
    /// `CancellationError` or ``BlobStreamError``, as for ``BlobChunks``.
    public typealias Failure = any Error

    /// The chunks the bytes come from.
    public let chunks: BlobChunks

    /// Starts an iteration.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(chunks: chunks.makeAsyncIterator())
    }

    /// Reads the bytes of one iteration, a chunk at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var chunks: BlobChunks.AsyncIterator
        var current: BlobChunk?
        var index = 0

        /// The next byte, or `nil` at the end of the blob.
        /// - Throws: As ``BlobChunks/AsyncIterator/next()``.
        public mutating func next() async throws -> UInt8? {
            try await next(isolation: nil)
        }

        /// The next byte, on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> UInt8? {
            while true {
                if let chunk = current, index < chunk.count {
                    defer { index += 1 }
                    return chunk[index]
                }
                guard let chunk = try await chunks.next(isolation: actor) else { return nil }
                current = chunk
                index = 0
            }
        }
    }
}

extension BlobChunks {
    /// The same blob as single bytes (see ``BlobBytes``; the chunks are the fast path).
    public var bytes: BlobBytes { BlobBytes(chunks: self) }
}
