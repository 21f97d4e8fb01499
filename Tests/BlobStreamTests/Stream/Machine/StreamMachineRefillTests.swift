import Foundation
import Testing
@testable import BlobStream
import BlobTestSupport

/// ``StreamMachine``'s asynchronous refill, block takes and seeks, one transition at a time,
/// without threads.
@Suite struct StreamMachineRefillTests {
    typealias H = MachineHarness

    /// An asynchronous machine whose queued refill has been claimed and has filled the cache
    /// with `count` bytes.
    static func filled(_ count: Int, length: Int64? = 100, blockSize: Int = 16) throws -> StreamMachine {
        var machine = H.opened(.asynchronous, length: length, blockSize: blockSize)
        let claimed = machine.claimQueuedRefill(1)
        #expect(claimed)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        let step = machine.refillReturned(H.fill(read.region, count), region: read.region, at: read.offset,
                                          generation: read.generation, &effects)
        #expect(step.isStop)
        #expect(H.events(effects) == [.hasBytesAvailable])
        return machine
    }

    @Test func aQueuedRefillRunsOnceForItsTicketOrForAReaderThatNeedsIt() {
        var machine = H.opened(.asynchronous)
        #expect(machine.refill == .queued(ticket: 1))
        let stale = machine.claimQueuedRefill(7)
        #expect(!stale)
        let mine = machine.claimQueuedRefill(nil)
        #expect(mine)
        #expect(machine.refill == .running)
        let again = machine.claimQueuedRefill(1)
        #expect(!again)
    }

    @Test func readsTakeCachedBytesAndTheReadThatEmptiesTheCacheRunsTheRefill() throws {
        var machine = try Self.filled(16)
        let destination = H.buffer(10)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let first = machine.readCached(into: destination, &effects)
        #expect(first.count == 10 && !first.refill)
        #expect(H.events(effects) == [.hasBytesAvailable])
        var second = StreamEffects()
        let last = machine.readCached(into: destination, &second)
        #expect(last.count == 6 && last.refill)
        #expect(H.events(second).isEmpty)
        #expect(machine.refill == .running)
        var third = StreamEffects()
        let empty = machine.readCached(into: destination, &third)
        #expect(empty.count == -1)
        #expect(machine.error == .wouldBlock(offset: 16))
    }

    @Test func aRefillThatWouldBlockParksUntilTheSourceSignals() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        let parked = machine.refillReturned(.wouldBlock, region: read.region, at: 0, generation: read.generation, &effects)
        #expect(parked.isStop)
        #expect(machine.refill == .parked)
        machine.sourceSignalled(&effects)
        #expect(effects.scheduleRefill == 2)
        #expect(machine.refill == .queued(ticket: 2))
    }

    @Test func aSignalDuringTheSourceCallReadsAgainAtOnce() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        machine.sourceSignalled(&effects)
        #expect(effects.scheduleRefill == nil)
        let again = machine.refillReturned(.wouldBlock, region: read.region, at: 0, generation: read.generation, &effects)
        #expect(again.isNext)
    }

    @Test func theRefillConfirmsTheLastBytesAndTheEnd() throws {
        var machine = H.opened(.asynchronous, length: 10)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        let step = machine.refillReturned(H.fill(read.region, 10), region: read.region, at: 0,
                                          generation: read.generation, &effects)
        let confirm = try #require(step.confirm)
        #expect(confirm.offset == 10 && confirm.confirmed == .bytes(10))
        #expect(machine.cache.count == 0)
        let done = machine.refillConfirmed(nil, confirm.confirmed, generation: confirm.generation, &effects)
        #expect(done.isStop)
        #expect(machine.cache.count == 10)

        var unknown = H.opened(.asynchronous, length: nil)
        _ = unknown.claimQueuedRefill(1)
        let end = try #require(unknown.nextRefillStep().read)
        var endEffects = StreamEffects()
        let endStep = unknown.refillReturned(.end, region: end.region, at: 0, generation: end.generation, &endEffects)
        let endConfirm = try #require(endStep.confirm)
        let changed = BlobStreamError.sourceChanged(resource: H.resource, offset: 0, reason: "gone")
        _ = unknown.refillConfirmed(changed, endConfirm.confirmed, generation: endConfirm.generation, &endEffects)
        #expect(unknown.error == changed)
        #expect(H.events(endEffects) == [.errorOccurred])
        #expect(unknown.refill == .idle)
    }

    @Test func reopenDuringARefill() throws {
        var machine = H.opened(.asynchronous, version: "v1")
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        let step = machine.refillReturned(.invalidated, region: read.region, at: 0, generation: read.generation, &effects)
        #expect(step.isReopen)
        let reopened = machine.beginReopen(maxReopens: 5, &effects)
        #expect(reopened == .success(0))
        #expect(machine.refill == .awaitingReopen)
        machine.endSourceCall(&effects)
        // A seek meanwhile changes where the refill reads, not that it waits for the reopen.
        var seek = StreamEffects()
        let refusal = machine.seek(to: 40, &seek)
        #expect(refusal == nil)
        #expect(seek.scheduleRefill == nil)
        var done = StreamEffects()
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v1")), &done)
        #expect(done.scheduleRefill != nil)
        let claimed = machine.claimQueuedRefill(done.scheduleRefill)
        #expect(claimed)
        let next = try #require(machine.nextRefillStep().read)
        #expect(next.offset == 40)
    }

    /// A seek to the end while a refill waits for a reopen: the reopen still completes (the
    /// source is open, nothing is refilled at the end), and a seek back refills from there.
    /// Before, the completion was dropped and the stream never read again.
    @Test func aSeekToTheEndDuringAReopenLeavesTheStreamReadableAfterASeekBack() throws {
        var machine = H.opened(.asynchronous, version: "v1")
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        _ = machine.refillReturned(.invalidated, region: read.region, at: 0, generation: read.generation, &effects)
        _ = machine.beginReopen(maxReopens: 5, &effects)
        machine.endSourceCall(&effects)
        var toEnd = StreamEffects()
        let toEndRefusal = machine.seek(to: 100, &toEnd)
        #expect(toEndRefusal == nil)
        var done = StreamEffects()
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v1")), &done)
        #expect(machine.reopen == .idle)
        #expect(machine.refill == .idle)
        #expect(done.closeSource == nil, "the reopened source is kept, not closed")
        var back = StreamEffects()
        let backRefusal = machine.seek(to: 10, &back)
        #expect(backRefusal == nil)
        let ticket = try #require(back.scheduleRefill, "a seek back refills")
        let claimed = machine.claimQueuedRefill(ticket)
        #expect(claimed)
        let next = try #require(machine.nextRefillStep().read)
        #expect(next.offset == 10)
    }

    @Test func aFailedReopenDuringARefillFailsTheStream() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        _ = machine.nextRefillStep()
        var effects = StreamEffects()
        machine.endSourceCall(&effects)
        _ = machine.beginReopen(maxReopens: 5, &effects)
        machine.endSourceCall(&effects)
        var done = StreamEffects()
        machine.reopenCompleted(.failure(.notFound(resource: H.resource)), &done)
        #expect(machine.error == .notFound(resource: H.resource))
        #expect(machine.refill == .idle)
        #expect(done.scheduleRefill == nil)
    }

    @Test func aRefillAnsweredAfterASeekReadsAgainAtTheNewOffset() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        _ = machine.seek(to: 50, &effects)
        let step = machine.refillReturned(H.fill(read.region, 16), region: read.region, at: 0,
                                          generation: read.generation, &effects)
        #expect(step.isNext)
        #expect(machine.cache.count == 0)
        let again = try #require(machine.nextRefillStep().read)
        #expect(again.offset == 50)
    }

    @Test func aRefillAnsweredAfterCloseStopsAndClosesTheSource() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var closing = StreamEffects()
        machine.close(&closing)
        #expect(closing.closeSource == nil)
        var effects = StreamEffects()
        let step = machine.refillReturned(H.fill(read.region, 16), region: read.region, at: 0,
                                          generation: read.generation, &effects)
        #expect(effects.closeSource == true)
        #expect(step.isNext)
        #expect(machine.nextRefillStep().isStop)
        #expect(machine.refill == .idle)
    }

    @Test func aSeekWhileParkedReadsAtTheNewOffsetAtOnce() throws {
        var machine = H.opened(.asynchronous)
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        _ = machine.refillReturned(.wouldBlock, region: read.region, at: 0, generation: read.generation, &effects)
        var seek = StreamEffects()
        let refusal = machine.seek(to: 30, &seek)
        #expect(refusal == nil)
        #expect(seek.scheduleRefill == 2)
        #expect(machine.refill == .queued(ticket: 2))
    }

    @Test func seeksAreRefusedPastTheEndAndChangeNothingAtTheEnd() throws {
        var machine = H.opened(.synchronous, length: 10)
        var effects = StreamEffects()
        let past = machine.seek(to: 11, &effects)
        #expect(past == .invalidOffset(resource: H.resource, offset: 11, length: 10))
        let toEnd = machine.seek(to: 10, &effects)
        #expect(toEnd == nil)
        #expect(H.events(effects) == [.endEncountered])
        var atEnd = StreamEffects()
        let again = machine.seek(to: 10, &atEnd)
        #expect(again == nil)
        #expect(H.events(atEnd).isEmpty)
        var back = StreamEffects()
        let start = machine.seek(to: 0, &back)
        #expect(start == nil)
        #expect(machine.status == .open)
        #expect(H.events(back) == [.hasBytesAvailable])
        machine.close(&back)
        let closed = machine.seek(to: 0, &back)
        #expect(closed == .closed)
    }

    @Test func takingABlockHandsTheCacheOverAndQueuesTheNext() throws {
        var machine = try Self.filled(16)
        var effects = StreamEffects()
        guard case .chunk(let chunk) = machine.takeBlock(&effects) else {
            Issue.record("expected a chunk")
            return
        }
        #expect(chunk.offset == 0 && chunk.count == 16)
        #expect(machine.offset == 16)
        #expect(effects.scheduleRefill == 2)
        var next = StreamEffects()
        guard case .wait = machine.takeBlock(&next) else {
            Issue.record("expected to wait for the refill")
            return
        }
        var ended = H.opened(.asynchronous, length: 0)
        guard case .end = ended.takeBlock(&next) else {
            Issue.record("expected the end")
            return
        }
    }

    /// Re-iteration after `break`: the first iteration's stream closes while its refill reads,
    /// so the source's close waits for that read; the next iteration's open waits for the close.
    @Test func reiterationAfterBreak() throws {
        let source = MemoryDataSource(data: Data(count: 100))
        var first = H.opened(.asynchronous)
        let firstTenant = SourceOwnership.newTenant()
        SourceOwnership.open(source, by: firstTenant) {}
        _ = first.claimQueuedRefill(1)
        let read = try #require(first.nextRefillStep().read)
        var closing = StreamEffects()
        first.close(&closing)
        #expect(closing.closeIsPending)
        SourceOwnership.closeIsPending(source, by: firstTenant)

        let secondStarted = Locked(false)
        let secondTenant = SourceOwnership.newTenant()
        SourceOwnership.open(source, by: secondTenant) { secondStarted.value = true }
        #expect(!secondStarted.value)

        var late = StreamEffects()
        _ = first.refillReturned(H.fill(read.region, 16), region: read.region, at: 0, generation: read.generation, &late)
        #expect(late.closeSource == true)
        var closes = 0
        SourceOwnership.close(source, by: firstTenant, final: true) { closes += 1 }
        #expect(closes == 1)
        #expect(secondStarted.value)
        // The first stream's work now reaches nothing of the second's.
        SourceOwnership.close(source, by: firstTenant, final: false) { closes += 1 }
        #expect(closes == 1)
        SourceOwnership.release(source, by: secondTenant)
    }
}
