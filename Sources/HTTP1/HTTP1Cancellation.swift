internal import SystemCalls

/// The cancellation of one request, or of a group of them (an S3 upload's parallel parts):
/// ``cancel()``, from any thread, interrupts every connection the requests use at that moment
/// and refuses them any other.
///
/// A connection is interrupted under the lock that ``unwatch(_:)`` takes (a flag and a byte
/// down a pipe), so once `unwatch` has returned, no cancellation of these requests reaches the
/// connection, not even one that had already looked it up: the pool may have handed it to
/// another request by then.
package final class HTTP1Cancellation: Sendable {
    private let state = LockedValue<(cancelled: Bool, connections: [ObjectIdentifier: HTTP1Connection])>((false, [:]))

    /// A cancellation not yet cancelled.
    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels: interrupts the connections in use. Idempotent.
    package func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.connections.values.forEach { $0.cancel() }
        }
    }

    /// Records `connection` as in use; `false` (and it is cancelled, not recorded) when already
    /// cancelled.
    package func watch(_ connection: HTTP1Connection) -> Bool {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.connections[ObjectIdentifier(connection)] = connection }
            return state.cancelled
        }
        if cancelled { connection.cancel() }
        return !cancelled
    }

    /// Forgets `connection`: a later ``cancel()`` no longer reaches it.
    package func unwatch(_ connection: HTTP1Connection) {
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
    }
}
