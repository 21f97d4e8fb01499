import Foundation

/// Runs `work` on a thread of its own, entering `group` until it returns: for blocking reads of
/// a child's pipes and other waits. On Linux, dispatch's global queues are the threads Swift's
/// tasks run on too, so a blocking read there holds one of the few threads every other test
/// waits for (a full run saw a child's output collected over a minute late).
public func onOwnThread(group: DispatchGroup? = nil, _ work: @escaping @Sendable () -> Void) {
    group?.enter()
    Thread.detachNewThread {
        work()
        group?.leave()
    }
}

/// `work`'s result, computed on a thread of its own (see ``onOwnThread(group:_:)``), for a test's
/// task that must not block the pool.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        onOwnThread { continuation.resume(with: Result { try work() }) }
    }
}
