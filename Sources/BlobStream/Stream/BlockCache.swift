/// The bytes of one source read that the consumer has not taken yet.
///
/// The stream asks its source for a whole block at a time and serves small reads from here, so
/// many small reads cost one source call. It refills only when every cached byte has been taken.
struct BlockCache: ~Copyable {
    /// The storage, allocated once per stream (and exchanged when ``BlobChunks`` takes a block).
    private(set) var storage: UnsafeMutableRawBufferPointer
    /// Index of the first byte not yet taken.
    private(set) var start = 0
    /// Index one past the last cached byte.
    private(set) var end = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 64)
    }

    deinit {
        storage.deallocate()
    }

    /// How many cached bytes are waiting.
    var count: Int { end - start }

    /// The room to fill, limited to `limit` bytes (the rest of the blob, when known).
    func fillRegion(limit: Int64?) -> UnsafeMutableRawBufferPointer {
        let size = limit.map { Int(min(Int64(storage.count), $0)) } ?? storage.count
        return UnsafeMutableRawBufferPointer(rebasing: storage[0..<size])
    }

    /// Marks the first `count` bytes of the storage as freshly filled.
    mutating func didFill(_ count: Int) {
        start = 0
        end = count
    }

    /// Copies up to `destination.count` cached bytes out and returns how many were copied.
    mutating func take(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(destination.count, count)
        if n > 0 {
            destination.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: n)
            start += n
        }
        return n
    }

    /// Hands the whole storage over when it holds only untaken bytes from its start, and takes
    /// `replacement` (of the same capacity) in its place: the caller owns the returned block,
    /// whose first `count` bytes are the ones that were cached. Returns `nil` (and keeps
    /// `replacement` untouched) when part of the block was already taken.
    mutating func exchange(for replacement: UnsafeMutableRawBufferPointer) -> (block: UnsafeMutableRawBufferPointer, count: Int)? {
        guard start == 0, end > 0, replacement.count == storage.count else { return nil }
        let handed = (block: storage, count: end)
        storage = replacement
        end = 0
        return handed
    }

    /// Forgets every cached byte (after a seek or a reopen).
    mutating func discard() {
        start = 0
        end = 0
    }
}
