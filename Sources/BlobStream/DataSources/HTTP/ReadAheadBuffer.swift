/// A fixed-capacity ring of bytes between a download and its reader.
///
/// The capacity is allocated once, so the memory an HTTP source holds never grows with the
/// blob: the download stops when ``freeCount`` reaches zero and resumes as the reader consumes.
/// Not thread-safe: its owner touches it only with its lock held (hence `@unchecked`), except
/// the bytes of a ``Loan``, which a receive writes without the lock.
final class ReadAheadBuffer: @unchecked Sendable {
    /// Free bytes after the held ones, lent to one receive that writes them outside the owner's
    /// lock (no copy through a staging buffer). While a loan is out, nothing else writes to the
    /// buffer, and its free space does not move: reads take bytes from the front only.
    struct Loan: @unchecked Sendable {
        /// The buffer lent from, kept alive by the loan even after its owner drops it.
        let buffer: ReadAheadBuffer
        /// Where the receive may write, from its start.
        let bytes: UnsafeMutableRawBufferPointer
    }

    /// The most bytes the buffer holds.
    let capacity: Int
    private let storage: UnsafeMutableRawPointer
    private var head = 0
    /// The number of bytes held.
    private(set) var count = 0
    /// Whether a ``Loan`` is out.
    private(set) var isLent = false

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

    /// Lends up to `limit` free bytes that follow the held ones without wrapping; `nil` when
    /// the buffer is full or already lent.
    func lend(limit: Int) -> Loan? {
        guard !isLent, freeCount > 0, limit > 0 else { return nil }
        let tail = (head + count) % capacity
        let run = min(limit, tail < head ? head - tail : capacity - tail)
        isLent = true
        return Loan(buffer: self, bytes: UnsafeMutableRawBufferPointer(start: storage + tail, count: run))
    }

    /// Ends the loan, keeping its first `received` bytes as held ones.
    func settle(_ loan: Loan, keeping received: Int) {
        precondition(loan.buffer === self && isLent && received <= loan.bytes.count, "settled a loan this buffer did not make")
        isLent = false
        count += max(0, received)
    }

    /// A buffer of the same capacity that holds the same bytes, with no loan out: for an owner
    /// whose lent bytes may still be written by a receive it gave up on.
    func copyHeldBytes() -> ReadAheadBuffer {
        let copy = ReadAheadBuffer(capacity: capacity)
        var offset = 0
        while offset < count {
            let start = (head + offset) % capacity
            let run = min(count - offset, capacity - start)
            offset += copy.write(UnsafeRawBufferPointer(start: storage + start, count: run))
        }
        return copy
    }

    /// Appends as many bytes of `bytes` as fit and returns how many that was; none while a loan
    /// is out.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard !isLent else { return 0 }
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
        // Starting over at the front makes the next write one run; not under a loan, whose
        // bytes must stay where they follow the held ones.
        if count == 0, !isLent { head = 0 }
    }

    /// Drops everything; not while a loan is out (its owner makes a new buffer instead).
    func removeAll() {
        precondition(!isLent, "cleared a buffer with a loan out")
        head = 0
        count = 0
    }
}
