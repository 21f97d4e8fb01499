import Dispatch
import Foundation
internal import SystemCalls

/// Where an ``AssetStore`` runs its completion handlers, declared so that a synchronous stream
/// can tell, before it blocks a thread, that the store could never answer: the store needs the
/// very thread or serial queue that would be blocked (POSInputStream's classic deadlock — a
/// synchronous open on the main thread of a gallery that answers on the main queue).
///
/// Declare ``any`` when the store answers on a queue of its own or on whatever thread finishes
/// the work; ``main`` when it answers on the main queue; ``serial(_:)`` when it answers on a
/// particular serial queue.
public struct AssetCallbackQueue: Sendable, CustomStringConvertible {
    private enum Kind: Sendable {
        case any
        case main(QueueMarker)
        case serial(QueueMarker)
    }

    private let kind: Kind

    /// Names the queue in error messages, e.g. `the main queue` or `serial queue "photos"`.
    public let description: String

    private init(kind: Kind, description: String) {
        self.kind = kind
        self.description = description
    }

    /// The store needs no particular thread: blocking any thread to wait for it is safe.
    public static let any = AssetCallbackQueue(kind: .any, description: "any queue")

    /// The store answers on the main queue, so waiting for it on the main thread, or in code the
    /// main queue runs, can never end. (The two differ where `dispatchMain()` hands the main
    /// queue to a worker thread, as on Linux.)
    public static let main = AssetCallbackQueue(kind: .main(QueueMarker.mark(.main)), description: "the main queue")

    /// The store answers on the serial queue `queue`, so waiting for it on that queue (or on a
    /// queue that targets it) can never end.
    ///
    /// Marks `queue` with a dispatch queue-specific value, which is how ``isCurrent`` recognises
    /// it; declaring the same queue twice reuses the mark.
    public static func serial(_ queue: DispatchQueue) -> AssetCallbackQueue {
        let marker = QueueMarker.mark(queue)
        return AssetCallbackQueue(kind: .serial(marker), description: "serial queue \"\(queue.label)\"")
    }

    /// Whether the calling thread is the one this queue runs on, so blocking it would stop the
    /// store from answering.
    public var isCurrent: Bool {
        switch kind {
        case .any:
            return false
        case .main(let marker):
            return Thread.isMainThread || QueueMarker.current() === marker
        case .serial(let marker):
            return QueueMarker.current() === marker
        }
    }
}

/// A unique value stored on a dispatch queue under one process-wide key. Dispatch looks a
/// queue-specific value up through the queue's target chain, so code running on a queue that
/// targets a marked queue is recognised too.
private final class QueueMarker: Sendable {
    private static let key = DispatchSpecificKey<QueueMarker>()
    private static let markingLock = LockedValue(())

    /// The marker on `queue`, setting a new one if it has none.
    static func mark(_ queue: DispatchQueue) -> QueueMarker {
        markingLock.withLock { _ in
            if let existing = queue.getSpecific(key: key) { return existing }
            let marker = QueueMarker()
            queue.setSpecific(key: key, value: marker)
            return marker
        }
    }

    /// The marker of the queue the calling code runs on, or of the nearest marked queue it
    /// targets.
    static func current() -> QueueMarker? {
        DispatchQueue.getSpecific(key: key)
    }
}
