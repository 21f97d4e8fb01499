import Foundation

/// A blob as an `AsyncSequence` of chunks: `for try await chunk in BlobChunks(...)`, over a file,
/// an asset, an HTTP resource, memory, or any ``BlobDataSource``.
///
/// ```swift
/// var checksum = SHA256()
/// for try await chunk in try BlobChunks(url: URL(fileURLWithPath: "/data/video.mp4")) {
///     chunk.withUnsafeBytes { checksum.update($0) }
/// }
/// ```
///
/// Chunks are the fast path: each is one block the source read, handed over without a copy
/// (see ``BlobChunk``). ``bytes`` is there for code that wants single bytes, at a much higher
/// cost per byte.
///
/// ## How it reads
/// It drives an asynchronous ``BlobInputStream``, so it has the stream's guarantees: a source
/// that goes stale is reopened and read on at the same byte; a reopen that finds another
/// version, or a blob rewritten while it was read, ends the sequence with
/// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` rather than mixing versions; an
/// end before the announced length is ``BlobStreamError/unexpectedEnd(resource:offset:expectedLength:)``.
/// - No thread is blocked per sequence: while the next chunk is not there, the task is
///   suspended, and the source is read on a shared, bounded set of threads.
/// - Demand drives it: the source reads the next chunk while the consumer works on the current
///   one, and never more than that one chunk ahead.
/// - Each chunk holds at most `chunkSize` bytes; sources may deliver fewer (an HTTP source
///   yields what has arrived), so do not count on a size, only on the order and the offsets.
///
/// ## Ending
/// The sequence ends (`nil`) at the real end of the blob, and closes the source. It throws the
/// ``BlobStreamError`` that stopped the stream, or `CancellationError` when the task is
/// cancelled: cancellation closes the source at once, from the cancelling thread, and the
/// source is not read after that. An iterator dropped before the end (a `break`) closes the
/// source too. (Not `throws(BlobStreamError)`: cancellation ends with the standard
/// `CancellationError`, as Swift's own async APIs do.)
///
/// A sequence over a data source or URL may be iterated again, one iteration at a time (the
/// source has one reader at a time); each iteration reads from `startOffset` anew. An iteration
/// left while its source is still reading ahead closes the source when that read returns; the
/// next iteration's open waits for that close, and nothing the old iteration left pending
/// reaches the new one. A sequence over a stream reads that stream once.
public struct BlobChunks: AsyncSequence, @unchecked Sendable {
    /// A chunk of the blob.
    public typealias Element = BlobChunk
    /// `CancellationError` or ``BlobStreamError``.
    public typealias Failure = any Error

    private enum Origin {
        case source(any BlobDataSource)
        case stream(BlobInputStream)
    }

    private let origin: Origin
    /// The offset of the first byte read.
    public let startOffset: Int64
    /// The most bytes in one chunk: the block size the source is read with.
    public let chunkSize: Int

    /// The chunk size used when none is given: 1 MiB, or the source's preferred block size when
    /// that is larger. Large chunks mean fewer source calls and task switches per byte.
    public static let defaultChunkSize = 1 << 20

    /// Chunks of `dataSource`, from `startOffset`.
    /// - Parameters:
    ///   - dataSource: Where the bytes come from; the sequence becomes its only caller while it
    ///     is iterated.
    ///   - startOffset: The offset of the first byte (for example what a server already has).
    ///     An offset past the end fails the first `next()` with
    ///     ``BlobStreamError/invalidOffset(resource:offset:length:)``.
    ///   - chunkSize: The most bytes per chunk; ``defaultChunkSize`` (or the source's preferred
    ///     block size, if larger) when `nil`.
    public init(dataSource: any BlobDataSource, startOffset: Int64 = 0, chunkSize: Int? = nil) {
        origin = .source(dataSource)
        self.startOffset = Swift.max(0, startOffset)
        self.chunkSize = Swift.max(1, chunkSize ?? Swift.max(Self.defaultChunkSize, dataSource.preferredBlockSize))
    }

    /// Chunks of the blob at `url`, through `registry` (`file:`, `http(s):`, `asset:` once a
    /// store is registered, and any scheme of yours).
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` for a URL no data source can be
    ///   made for, or whatever the scheme's factory throws.
    public init(url: URL, startOffset: Int64 = 0, chunkSize: Int? = nil, registry: BlobURLRegistry = .shared) throws(BlobStreamError) {
        self.init(dataSource: try registry.dataSource(for: url), startOffset: startOffset, chunkSize: chunkSize)
    }

    /// Chunks of `stream`, which the sequence reads once and closes.
    ///
    /// An asynchronous stream is read as it is: opened if it is not open yet, from its current
    /// offset, with its block size as the chunk size. A synchronous stream that is not open yet
    /// is replaced by an asynchronous one over its data source, from the offset it was set to
    /// (it would block a thread otherwise), and stays unopened; a synchronous stream already open
    /// cannot be read without blocking, and fails the first `next()`.
    public init(stream: BlobInputStream) {
        origin = .stream(stream)
        startOffset = stream.offset
        chunkSize = stream.blockSize
    }

    /// Starts an iteration.
    public func makeAsyncIterator() -> AsyncIterator {
        switch origin {
        case .source(let source):
            return AsyncIterator(reader: ChunksIteration(stream: makeStream(over: source, at: startOffset)))
        case .stream(let stream):
            guard stream.mode == .synchronous else { return AsyncIterator(reader: ChunksIteration(stream: stream)) }
            guard stream.streamStatus == .notOpen else {
                return AsyncIterator(reader: ChunksIteration(refusing: stream, with: .sourceFailed(
                    resource: stream.resourceName,
                    reason: "a synchronous stream that is already open cannot be read without blocking; pass it unopened, or in asynchronous mode")))
            }
            let replacement = makeStream(over: stream.dataSource, at: stream.offset)
            replacement.maxConsecutiveReopens = stream.maxConsecutiveReopens
            return AsyncIterator(reader: ChunksIteration(stream: replacement))
        }
    }

    private func makeStream(over source: any BlobDataSource, at offset: Int64) -> BlobInputStream {
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        stream.blockSize = chunkSize
        if offset > 0 { try? stream.seek(to: offset) }
        return stream
    }

    /// Reads the chunks of one iteration.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: ChunksIteration

        /// The next chunk, or `nil` at the end of the blob (and after an error was thrown).
        /// - Throws: `CancellationError` when the task is cancelled, else a ``BlobStreamError``.
        public mutating func next() async throws -> BlobChunk? {
            try await reader.next(isolation: nil)
        }

        /// The next chunk, on the caller's actor: see ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> BlobChunk? {
            try await reader.next(isolation: actor)
        }
    }
}
