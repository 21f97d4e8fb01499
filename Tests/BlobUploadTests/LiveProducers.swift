import BlobTestSupport
import Foundation
import SystemCalls

/// What a test producer of live data saw: how often it was pulled, and whether it was
/// cancelled and released.
final class ProducerLog: Sendable {
    private let state = LockedValue<(pulls: Int, pullsAfterCancel: Int, stalled: Bool, cancelled: Bool, released: Bool)>(
        (0, 0, false, false, false))

    var pulls: Int { state.withLock { $0.pulls } }
    var pullsAfterCancel: Int { state.withLock { $0.pullsAfterCancel } }
    /// Whether a pull waits at `stallAt` for its cancellation.
    var stalled: Bool { state.withLock { $0.stalled } }
    var cancelled: Bool { state.withLock { $0.cancelled } }
    var released: Bool { state.withLock { $0.released } }

    func pulled() {
        state.withLock { state in
            state.pulls += 1
            if state.cancelled { state.pullsAfterCancel += 1 }
        }
    }

    func markStalled() { state.withLock { $0.stalled = true } }
    func markCancelled() { state.withLock { $0.cancelled = true } }
    func markReleased() { state.withLock { $0.released = true } }

    /// Waits, polling, until `condition` holds or 30 s passed; whether it held.
    func wait(until condition: (ProducerLog) -> Bool) async -> Bool {
        for _ in 0..<3000 {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(self)
    }
}

/// The error a test producer throws.
struct ProducerBroke: Error, Hashable, CustomStringConvertible {
    var description: String { "the encoder broke" }
}

/// `size` pseudo-random bytes (``TempFiles/pseudoRandomBytes(count:seed:from:)`` of `seed`, so a
/// file written with the same seed holds the same bytes), in chunks of changing sizes, each
/// pulled only when asked for; it throws ``ProducerBroke`` instead of going past `failAt`, and,
/// with `stallAt`, waits there until it is cancelled. It records every pull in `log`.
struct GeneratedBytes: AsyncSequence, Sendable {
    typealias Element = Data

    let size: Int
    var seed: UInt64 = 1
    var failAt: Int?
    var stallAt: Int?
    var sizes = [1, 4093, 65_536, 300_001, 1 << 20, 17, 2 << 20]
    var log = ProducerLog()

    func makeAsyncIterator() -> Iterator {
        Iterator(sequence: self)
    }

    final class Iterator: AsyncIteratorProtocol {
        let sequence: GeneratedBytes
        var offset = 0
        var turn = 0

        init(sequence: GeneratedBytes) {
            self.sequence = sequence
        }

        deinit {
            sequence.log.markReleased()
        }

        func next() async throws -> Data? {
            sequence.log.pulled()
            if let stallAt = sequence.stallAt, offset >= stallAt {
                await Self.waitForCancellation(sequence.log)
                return nil
            }
            if let failAt = sequence.failAt, offset >= failAt { throw ProducerBroke() }
            guard offset < sequence.size else { return nil }
            var count = sequence.sizes[turn % sequence.sizes.count]
            turn += 1
            count = Swift.min(count, sequence.size - offset, (sequence.failAt ?? .max) - offset, (sequence.stallAt ?? .max) - offset)
            defer { offset += count }
            return Data(TempFiles.pseudoRandomBytes(count: count, seed: sequence.seed, from: offset))
        }

        /// Suspends until the pulling task is cancelled.
        private static func waitForCancellation(_ log: ProducerLog) async {
            log.markStalled()
            let gate = LockedValue<CheckedContinuation<Void, Never>?>(nil)
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let cancelledAlready = gate.withLock { stored in
                        stored = continuation
                        return Task.isCancelled
                    }
                    if cancelledAlready { gate.withLock { $0.take() }?.resume() }
                }
            } onCancel: {
                log.markCancelled()
                gate.withLock { $0.take() }?.resume()
            }
        }
    }
}

/// Writes the bytes a ``GeneratedBytes`` of `size` and `seed` yields to a scratch file.
func writeGeneratedFile(size: Int, seed: UInt64) throws -> String {
    try makeRandomFile(size: size, seed: seed)
}
