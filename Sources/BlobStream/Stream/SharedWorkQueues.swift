import Foundation
import Synchronization

/// The few serial queues that every stream's background work runs on: one per core, at least
/// two, each a thread at most, handed out round-robin.
///
/// A serial queue of its own per stream got an overcommitted thread of its own whenever many
/// streams had work at once (245 threads for 256 streams). Dispatch's shared concurrent pool
/// would bound them too, but it is also where Swift's tasks run on Linux, and an app whose tasks
/// block it would stall every stream; these threads belong to the library, and what runs on them
/// never blocks (sources answer `wouldBlock` instead of waiting).
enum SharedWorkQueues {
    static let queues: [DispatchQueue] = (0..<max(2, ProcessInfo.processInfo.activeProcessorCount)).map { index in
        DispatchQueue(label: "BlobStream.work.\(index)")
    }
    private static let turn = Atomic<Int>(0)

    /// The queue for the next stream (or calculation) to target.
    static func next() -> DispatchQueue {
        let index = turn.add(1, ordering: .relaxed).oldValue
        return queues[index % queues.count]
    }
}
