#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that only one thread at a time may touch, guarded by a `pthread_mutex_t`.
///
/// Not `Synchronization.Mutex`: on Linux its lock and unlock run inside a library that
/// ThreadSanitizer does not instrument, so every access it orders is reported as a data race,
/// and real races drown among them. ThreadSanitizer understands `pthread_mutex_t`.
///
/// Not recursive: `body` must not take the same lock again.
package final class LockedValue<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var storage: Value

    /// Guards `value`.
    package init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        storage = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on the value with the lock held, and returns what it returns.
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage)
    }
}
