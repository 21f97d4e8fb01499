import Foundation

/// The body that a completion-handler or `async` task receives in one piece (see
/// ``BodyDelivery``), kept in `malloc`ed memory so that an allocation the system refuses is
/// reported as an error instead of trapping inside `Data`, and sized by the bytes that
/// actually arrive, not by the length a source claims.
final class WholeBodyBuffer {
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Bytes written so far.
    private(set) var count = 0

    /// Room for `capacity` bytes, or `nil` when the system refuses the memory.
    init?(capacity: Int) {
        guard let storage = malloc(max(capacity, 1)) else { return nil }
        self.storage = storage
        self.capacity = max(capacity, 1)
    }

    deinit { free(storage) }

    /// Lets `write` fill up to `want` bytes after the ones written (growing the storage by
    /// doubling when needed) and counts what it reports; `nil` when the memory is refused.
    func append(upTo want: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) -> Int? {
        if count + want > capacity {
            let grown = max(count + want, capacity * 2)
            guard let larger = realloc(storage, grown) else { return nil }
            storage = larger
            capacity = grown
        }
        guard let storage else { return nil }
        let written = write(storage.assumingMemoryBound(to: UInt8.self) + count)
        if written > 0 { count += written }
        return written
    }

    /// The bytes written, handed over to a `Data` that frees them; the buffer is empty after.
    func take() -> Data {
        guard let storage, count > 0 else { return Data() }
        self.storage = nil
        defer { count = 0; capacity = 0 }
        return Data(bytesNoCopy: storage, count: count, deallocator: .free)
    }
}
