import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one way a transfer talks to its `URLProtocolClient`. Once ``close()`` has returned no
/// client call starts again: `stopLoading` closes the gate, and a call already under way has
/// finished by then (both hold the same lock). Closing also drops the protocol, which breaks
/// the cycle protocol → transfer → gate → protocol.
final class ProtocolClientGate: @unchecked Sendable {
    private let lock = NSLock()
    private var owner: URLProtocol?
    private let queue: DispatchQueue

    /// `queue` is the protocol's serial queue, the only one client calls may come from.
    init(owner: URLProtocol, queue: DispatchQueue) {
        self.owner = owner
        self.queue = queue
    }

    /// Makes `call` with the client unless the gate is closed. Client calls only queue work
    /// (FoundationNetworking adds operations to the session's delegate queue or resumes a
    /// continuation), so holding the lock across them cannot block `stopLoading` for long.
    /// - Returns: Whether the call was made.
    @discardableResult
    func send(_ call: (any URLProtocolClient, URLProtocol) -> Void) -> Bool {
        #if DEBUG
        dispatchPrecondition(condition: .onQueue(queue))  // so every test checks the thread rule
        #endif
        return lock.withLock {
            guard let owner, let client = owner.client else { return false }
            call(client, owner)
            return true
        }
    }

    /// Whether the gate is still open.
    var isOpen: Bool { lock.withLock { owner != nil } }

    /// Stops every later client call. Idempotent.
    func close() {
        lock.withLock { owner = nil }
    }
}
