import Foundation
import Testing
@testable import BlobStream
import BlobTestSupport

/// Whether ``BlobChunks``' refill of the next block goes to the work queue
/// (``ChunkRefillDispatch``): always for a source that waits; for an immediate one, until the
/// consumer keeps claiming it first, then every eighth, and always again once the work queue
/// gets one first. One transition at a time, without threads.
@Suite struct ChunkRefillDispatchTests {
    typealias H = MachineHarness

    /// Takes the filled block of `machine` as a chunk; returns the take's effects.
    static func take(_ machine: inout StreamMachine) throws -> StreamEffects {
        var effects = StreamEffects()
        guard case .chunk(let chunk) = machine.takeBlock(&effects) else {
            Issue.record("the cache had no block")
            return effects
        }
        #expect(chunk.count == 16)
        return effects
    }

    /// Runs the queued refill, claimed by the consumer (`byConsumer`) or by the work queue
    /// under its ticket, until the cache holds the next block.
    static func fill(_ machine: inout StreamMachine, byConsumer: Bool) throws {
        guard case .queued(let ticket) = machine.refill else {
            Issue.record("no refill queued: \(machine.refill)")
            return
        }
        let claimed = machine.claimQueuedRefill(byConsumer ? nil : ticket)
        #expect(claimed)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        _ = machine.refillReturned(H.fill(read.region, 16), region: read.region, at: read.offset,
                                   generation: read.generation, &effects)
        let cached = machine.cache.count
        #expect(cached == 16)
    }

    /// An asynchronous machine on a long blob whose first block was read ahead by the work queue.
    static func started(immediate: Bool) throws -> StreamMachine {
        var machine = H.opened(.asynchronous, length: 16 * 100, immediate: immediate)
        try fill(&machine, byConsumer: false)
        return machine
    }

    @Test func aConsumerThatKeepsClaimingTheRefillWakesTheWorkQueueOnlyEveryEighthBlock() throws {
        var machine = try Self.started(immediate: true)
        var sent: [Bool] = []
        for _ in 0..<20 {
            sent.append(try Self.take(&machine).scheduleRefill != nil)
            let queued = machine.refill != .idle
            #expect(queued, "the next block is always queued")
            try Self.fill(&machine, byConsumer: true)
        }
        // Two claims in a row, then seven blocks kept for the consumer and an eighth sent.
        let kept = Array(repeating: false, count: 7)
        #expect(sent == [true, true] + kept + [true] + kept + [true] + [false, false])
    }

    @Test func theWorkQueueRunningARefillFirstSendsEveryOneAgain() throws {
        var machine = try Self.started(immediate: true)
        for _ in 0..<3 {
            _ = try Self.take(&machine)
            try Self.fill(&machine, byConsumer: true)
        }
        let lazy = machine.chunkRefills.isLazy
        #expect(lazy)
        // Two sent, one kept back so far; six more kept, then the eighth goes to the work
        // queue, where it runs first: the consumer slowed down.
        for _ in 0..<6 {
            let kept = try Self.take(&machine).scheduleRefill
            #expect(kept == nil)
            try Self.fill(&machine, byConsumer: true)
        }
        let probe = try Self.take(&machine).scheduleRefill
        #expect(probe != nil)
        try Self.fill(&machine, byConsumer: false)
        let eager = !machine.chunkRefills.isLazy
        #expect(eager)
        for _ in 0..<4 {
            let sent = try Self.take(&machine).scheduleRefill
            #expect(sent != nil, "read while the consumer works")
            try Self.fill(&machine, byConsumer: false)
        }
    }

    @Test func aSourceThatWaitsAlwaysHasItsRefillSent() throws {
        var machine = try Self.started(immediate: false)
        for _ in 0..<12 {
            let sent = try Self.take(&machine).scheduleRefill
            #expect(sent != nil)
            try Self.fill(&machine, byConsumer: true)
        }
    }

    @Test func aRefillKeptForTheConsumerStillReadsWhereTheStreamIsAfterASeek() throws {
        var machine = try Self.started(immediate: true)
        for _ in 0..<3 {
            _ = try Self.take(&machine)
            try Self.fill(&machine, byConsumer: true)
        }
        let kept = try Self.take(&machine).scheduleRefill
        #expect(kept == nil)
        var effects = StreamEffects()
        let refused = machine.seek(to: 160, &effects)
        #expect(refused == nil)
        let claimed = machine.claimQueuedRefill(nil)
        #expect(claimed)
        let read = try #require(machine.nextRefillStep().read)
        #expect(read.offset == 160)
    }
}
