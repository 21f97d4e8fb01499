import Foundation
import Synchronization

/// What a request body's sender measures and paces, beside its ``HTTP1Wait``: a rate limit
/// (the body goes out in slices, each after the wait the limit asks for) and an observer of the
/// bytes written. Only body bytes are metered, never the head.
///
/// Time spent waiting for the limit does not count as waiting on the network: a
/// ``HTTP1Pace`` does not see it, so a low limit never fails a minimum speed.
package struct HTTP1Meter: Sendable {
    /// The largest slice written at once: a limit paces each, an observer hears of each.
    package var slice: Int
    /// Reserves a slice of this many bytes and returns the nanoseconds to wait before it is
    /// written; `nil` for no limit.
    package var reserve: (@Sendable (Int) -> UInt64)?
    /// Told, on the sending thread, after each write of body bytes: its count, or, for a
    /// meter of an exchange (``perAttempt()``), the bytes of the body written so far.
    package var observe: (@Sendable (Int) -> Void)?

    /// A meter; with neither a limit nor an observer it changes nothing.
    package init(slice: Int = .max, reserve: (@Sendable (Int) -> UInt64)? = nil, observe: (@Sendable (Int) -> Void)? = nil) {
        self.slice = max(1, slice)
        self.reserve = reserve
        self.observe = observe
    }
}

extension HTTP1Meter {
    /// This meter for one attempt at a request: its observer hears the running total of the
    /// body's bytes written in this attempt, so a body sent again (after a stale kept-alive
    /// connection, after a redirect) counts from its first byte again instead of twice.
    package func perAttempt() -> HTTP1Meter {
        guard let observe else { return self }
        let total = RunningTotal()
        var meter = self
        meter.observe = { count in observe(total.add(count)) }
        return meter
    }
}

/// A count several writes add to.
private final class RunningTotal: Sendable {
    private let value = Atomic<Int>(0)

    func add(_ count: Int) -> Int { value.add(count, ordering: .relaxed).newValue }
}

extension HTTP1Connection {
    /// Sends all of `bytes` within `wait`, paced and observed by `meter`: in slices of
    /// ``HTTP1Meter/slice``, each after the wait its limit asks for (a cancellation ends the
    /// wait at once) and reported to its observer once written.
    package func send(_ bytes: UnsafeRawBufferPointer, wait: HTTP1Wait, meter: HTTP1Meter?) throws(HTTP1Error) {
        guard let meter, meter.reserve != nil || meter.observe != nil else {
            return try send(bytes, wait: wait)
        }
        var start = 0
        while start < bytes.count {
            let end = start + min(meter.slice, bytes.count - start)
            if let reserve = meter.reserve {
                try pause(nanoseconds: reserve(end - start))
            }
            try send(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), wait: wait)
            meter.observe?(end - start)
            start = end
        }
    }

    /// Waits `nanoseconds`, failing with ``HTTP1Error/cancelled`` as soon as the connection is
    /// cancelled.
    func pause(nanoseconds: UInt64) throws(HTTP1Error) {
        let deadline = DispatchTime.now().uptimeNanoseconds + nanoseconds
        while true {
            try checkCancelled()
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return }
            // Short sleeps: a cancellation is noticed within 20 ms.
            Thread.sleep(forTimeInterval: Double(min(deadline - now, 20_000_000)) / 1e9)
        }
    }
}
