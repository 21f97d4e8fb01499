/// A fixed-capacity ring of bytes between a download and its reader.
///
/// The capacity is allocated once, so the memory an HTTP source holds never grows with the
/// blob: the download stops when ``freeCount`` reaches zero and resumes as the reader consumes.
/// Not thread-safe: its owner touches it only with its lock held (hence `@unchecked`).
final class ReadAheadBuffer: @unchecked Sendable {
    /// The most bytes the buffer holds.
    let capacity: Int
    private let storage: UnsafeMutableRawPointer
    private var head = 0
    /// The number of bytes held.
    private(set) var count = 0

    /// Allocates `capacity` bytes (at least 1).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    /// How many more bytes fit.
    var freeCount: Int { capacity - count }

    /// Appends as many bytes of `bytes` as fit and returns how many that was.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let total = min(bytes.count, freeCount)
        guard total > 0, let source = bytes.baseAddress else { return 0 }
        var copied = 0
        while copied < total {
            let tail = (head + count) % capacity
            let run = min(total - copied, capacity - tail)
            (storage + tail).copyMemory(from: source + copied, byteCount: run)
            copied += run
            count += run
        }
        return total
    }

    /// Moves up to `destination.count` bytes from the front into `destination`; returns how many.
    func read(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let total = min(destination.count, count)
        guard total > 0, let target = destination.baseAddress else { return 0 }
        var copied = 0
        while copied < total {
            let run = min(total - copied, capacity - head)
            (target + copied).copyMemory(from: storage + head, byteCount: run)
            copied += run
            discard(run)
        }
        return total
    }

    /// Drops up to `byteCount` bytes from the front.
    func discard(_ byteCount: Int) {
        let dropped = min(max(0, byteCount), count)
        head = (head + dropped) % capacity
        count -= dropped
        if count == 0 { head = 0 }
    }

    /// Drops everything.
    func removeAll() {
        head = 0
        count = 0
    }
}
