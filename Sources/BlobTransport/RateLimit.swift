import Dispatch
import Foundation
package import HTTP1
internal import SystemCalls

/// The most bytes per second a transfer may move, curl's `--limit-rate`: one pacing rule for
/// every client of the package (the tus and streamed-PUT uploads, S3, `blobstream cat`).
///
/// A limit is an object, so that one limit can be shared: give the same instance to several
/// clients (the parts of an S3 upload in flight share their client's) and they share the rate.
/// Bytes are paced as they are written, in slices of at most ``sliceSize`` (a twentieth of a
/// second's worth), each sent when its turn comes, never in bursts of a whole chunk or part:
/// over any window of a few seconds the average stays within a few percent of the limit, and
/// nothing is buffered for it, so memory does not grow. Time waiting for the limit does not count against a
/// ``MinimumSpeed``.
///
/// Thread-safe.
public final class RateLimit: Sendable {
    /// The limit, in bytes per second; at least 1.
    public let bytesPerSecond: Int64
    /// The nanoseconds of uptime at which the bytes reserved so far have all gone out at the
    /// limit (the "theoretical arrival time" of a generic cell-rate algorithm).
    private let due = LockedValue<UInt64>(0)
    /// How far ``due`` may lag behind the present: a sender that woke up late (a busy machine)
    /// catches up on that much, while one that was idle gains no more than that in credit — two
    /// slices, a fiftieth of a 5 s window.
    private let credit: UInt64

    /// A limit of `bytesPerSecond`; `nil` for 0 or less (no rate can be paced at or below 0).
    public init?(bytesPerSecond: Int64) {
        guard bytesPerSecond > 0 else { return nil }
        self.bytesPerSecond = bytesPerSecond
        credit = UInt64(2 * Self.sliceSeconds * 1e9)
    }

    /// The largest number of bytes sent as one paced slice: a twentieth of a second's worth,
    /// at least 1 byte and at most 16 MiB.
    public var sliceSize: Int {
        Int(min(max(bytesPerSecond / 20, 1), 16 << 20))
    }

    private static let sliceSeconds = 0.05

    /// Reserves `count` bytes and returns the nanoseconds to wait before sending them (0: at
    /// once). Reservations are taken in turn, so concurrent senders share the rate.
    public func reserve(_ count: Int) -> UInt64 {
        let now = DispatchTime.now().uptimeNanoseconds
        let cost = UInt64((Double(max(count, 0)) / Double(bytesPerSecond) * 1e9).rounded(.up))
        return due.withLock { due in
            let start = max(due, now > credit ? now - credit : 0)
            due = start + cost
            return start > now ? start - now : 0
        }
    }

    /// Waits until `count` bytes may be sent (``reserve(_:)``), on the calling thread.
    public func pace(_ count: Int) {
        let wait = reserve(count)
        if wait > 0 { Thread.sleep(forTimeInterval: Double(wait) / 1e9) }
    }

    /// Waits until `count` bytes may be sent (``reserve(_:)``), suspending the task.
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    public func paced(_ count: Int) async throws {
        let wait = reserve(count)
        if wait > 0 { try await Task.sleep(nanoseconds: wait) }
    }
}

extension HTTP1Meter {
    /// How a request body is paced by `limit` and observed by `observe` (told each slice
    /// written: 256 KiB at most without a limit); `nil` for neither. The one meter of every
    /// upload client.
    package static func body(limitedBy limit: RateLimit?, observing observe: (@Sendable (Int) -> Void)?) -> HTTP1Meter? {
        if let limit {
            return HTTP1Meter(slice: limit.sliceSize, reserve: { limit.reserve($0) }, observe: observe)
        }
        return observe.map { HTTP1Meter(slice: 256 << 10, observe: $0) }
    }
}
