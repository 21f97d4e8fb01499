import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a transfer talks to its `URLProtocolClient`: every call runs on the queue that
/// called `startLoading` (the task's work queue, see ``TaskInternals``), in the order sent, and
/// none runs once the gate is closed.
///
/// Why that queue: FoundationNetworking's client reads the session's task registry, without a
/// lock, in every call; the registry belongs to the session's work queue, where tasks are added
/// and removed. Its own protocols call the client there. A call from any other thread races
/// with the tasks of the same session starting and ending (seen as a crash in
/// `URLSession.behaviour(for:)` with many tasks on one session). It is also the article's rule:
/// answer on the thread that started loading.
final class ProtocolClientGate: @unchecked Sendable {
    private let lock = NSLock()
    private var owner: URLProtocol?
    private var sentBodyBytes: Int64 = 0
    private var sentResponse = false
    private let clientQueue: DispatchQueue

    /// `clientQueue` is the queue `startLoading` and `stopLoading` run on.
    init(owner: URLProtocol, clientQueue: DispatchQueue) {
        self.owner = owner
        self.clientQueue = clientQueue
    }

    /// Queues `call` on the client queue; it is made there unless the gate is closed by then.
    /// `bodyBytes` (of a `didLoad`) count towards ``deliveredBodyBytes`` once made, and a call
    /// that `isResponse` sets ``responseDelivered``.
    func send(bodyBytes: Int = 0, isResponse: Bool = false, _ call: @escaping @Sendable (any URLProtocolClient, URLProtocol) -> Void) {
        clientQueue.async { [self] in
            lock.withLock {
                guard let owner, let client = owner.client, Self.isLive(owner.task) else { return }
                call(client, owner)
                sentBodyBytes += Int64(bodyBytes)
                if isResponse { sentResponse = true }
            }
        }
    }

    /// Whether the client may still be called for `task`. FoundationNetworking traps ("a task
    /// that is not in the registry") on any client call for a task it has completed or is
    /// cancelling, which it ends itself; a call that would come after that (from a transfer that
    /// the task no longer runs, seen once in a full test run) is dropped instead. Read on the
    /// task's work queue, where the task completes, so the answer holds for the call.
    private static func isLive(_ task: URLSessionTask?) -> Bool {
        guard let task else { return true }
        return task.state != .completed && task.state != .canceling
    }

    /// Body bytes the client has been given.
    var deliveredBodyBytes: Int64 { lock.withLock { sentBodyBytes } }

    /// Whether the client has been given the response: not merely queued, since a `stopLoading`
    /// that closes the gate first drops it.
    var responseDelivered: Bool { lock.withLock { sentResponse } }

    /// Closes the gate after the calls already sent: for the transfer's own end.
    func closeAfterSent() {
        clientQueue.async { [self] in close() }
    }

    /// Closes the gate now: `stopLoading`, on the client queue. A call queued earlier and not
    /// yet made is dropped; one under way has finished (same lock). Also drops the protocol,
    /// which breaks the cycle protocol → transfer → gate → protocol.
    func close() {
        lock.withLock { owner = nil }
    }
}
