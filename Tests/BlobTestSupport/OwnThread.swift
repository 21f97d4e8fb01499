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
/// task that must not block the pool. Throws what `work` throws (nothing, for work that cannot).
public func offThePool<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
        onOwnThread { continuation.resume(returning: Result { () throws(E) -> T in try work() }) }
    }
    return try result.get()
}
