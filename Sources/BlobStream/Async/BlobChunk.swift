import Foundation

/// One chunk of a blob, as ``BlobChunks`` yields it: bytes it owns, and where they start.
///
/// The bytes are the very block the source read them into, handed over without a copy; the
/// chunk is immutable, so it may be passed between tasks. When the last copy of a chunk goes
/// away its memory goes back to the sequence for a later block, so a loop that drops each chunk
/// before asking for the next allocates nothing after its first two chunks.
///
/// Read it in place with ``withUnsafeBytes(_:)`` (the fast way), as a collection of `UInt8`
/// (`Array(chunk)`, `data.append(contentsOf: chunk)` copy it once), or as ``data``, a `Data`
/// that shares the chunk's memory.
public struct BlobChunk: Sendable, RandomAccessCollection, ContiguousBytes {
    /// The offset in the blob of the chunk's first byte.
    public let offset: Int64
    let storage: ChunkStorage

    init(offset: Int64, storage: ChunkStorage) {
        self.offset = offset
        self.storage = storage
    }

    /// The first index: 0.
    public var startIndex: Int { 0 }
    /// The number of bytes.
    public var endIndex: Int { storage.count }

    /// The byte at `position` (from 0).
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < storage.count, "BlobChunk index out of range")
        return storage.bytes.load(fromByteOffset: position, as: UInt8.self)
    }

    /// Calls `body` with the chunk's bytes, valid only during the call.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) { try body(UnsafeRawBufferPointer(storage.bytes)) }
    }

    /// Lets `append(contentsOf:)` and `Array.init` copy the bytes in one go.
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try withExtendedLifetime(storage) {
            try body(UnsafeRawBufferPointer(storage.bytes).assumingMemoryBound(to: UInt8.self))
        }
    }

    /// The bytes as `Data`, sharing the chunk's memory (no copy): the memory is reused only
    /// after this `Data` and every copy of the chunk are gone. A value like any `Data`: changing
    /// a copy of it copies the bytes first, never the chunk's.
    public var data: Data {
        guard storage.count > 0 else { return Data() }
        let storage = self.storage
        // Through an immutable NSData: a `Data(bytesNoCopy:)` of a large block would be changed
        // in place, the pooled block under every other reader of the chunk.
        return Data(referencing: NSData(
            bytesNoCopy: storage.bytes.baseAddress!, length: storage.count,
            deallocator: { _, _ in withExtendedLifetime(storage) {} }))
    }
}

/// The memory of one ``BlobChunk``: a block read by the stream, which goes back to its pool
/// when the last chunk that shares it is gone. Immutable once made.
final class ChunkStorage: @unchecked Sendable {
    /// The block, as allocated (its whole capacity).
    private let block: UnsafeMutableRawBufferPointer
    /// The chunk's bytes: the start of the block.
    let bytes: UnsafeMutableRawBufferPointer
    private let pool: ChunkBufferPool

    /// Takes ownership of `block`, of which the first `count` bytes are the chunk.
    init(block: UnsafeMutableRawBufferPointer, count: Int, pool: ChunkBufferPool) {
        self.block = block
        self.bytes = UnsafeMutableRawBufferPointer(rebasing: block[0..<count])
        self.pool = pool
    }

    var count: Int { bytes.count }

    deinit {
        pool.recycle(block)
    }
}

/// Blocks of one size, kept for reuse so that a sequence which yields a new chunk for every
/// source read does not allocate (and fault in) a fresh block each time.
final class ChunkBufferPool: @unchecked Sendable {
    /// The size of every block.
    let blockSize: Int
    /// Blocks kept at most: the one the consumer just dropped and one more.
    private static let kept = 2
    private let lock = NSLock()
    private var free: [UnsafeMutableRawBufferPointer] = []

    init(blockSize: Int) {
        self.blockSize = max(1, blockSize)
    }

    deinit {
        for block in free { block.deallocate() }
    }

    /// A block of ``blockSize`` bytes: a recycled one, or a new one.
    func take() -> UnsafeMutableRawBufferPointer {
        if let block = lock.withLock({ free.popLast() }) { return block }
        return .allocate(byteCount: blockSize, alignment: 64)
    }

    /// Gives `block` back; it is freed when the pool already keeps enough.
    func recycle(_ block: UnsafeMutableRawBufferPointer) {
        let kept = lock.withLock { () -> Bool in
            guard block.count == blockSize, free.count < Self.kept else { return false }
            free.append(block)
            return true
        }
        if !kept { block.deallocate() }
    }
}
