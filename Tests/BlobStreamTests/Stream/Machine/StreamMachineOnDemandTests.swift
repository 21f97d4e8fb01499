import Foundation
import Testing
@testable import BlobStream
import BlobTestSupport

/// Asynchronous reads of an immediate source (``BlobDataSource/readsImmediately``): the reader
/// fills on demand, into its own buffer when it has room for a block. One transition at a time,
/// without threads.
@Suite struct StreamMachineOnDemandTests {
    typealias H = MachineHarness

    /// An immediate asynchronous machine (block 16) whose first block, read ahead after the
    /// open, has been taken whole by a read: the cache is empty and nothing runs.
    static func drained(length: Int64? = 100) throws -> StreamMachine {
        var machine = H.opened(.asynchronous, length: length, immediate: true)
        #expect(machine.refill == .queued(ticket: 1), "the first block is still read ahead")
        _ = machine.claimQueuedRefill(1)
        let read = try #require(machine.nextRefillStep().read)
        var effects = StreamEffects()
        _ = machine.refillReturned(H.fill(read.region, 16), region: read.region, at: 0, generation: read.generation, &effects)
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var taking = StreamEffects()
        let taken = try #require(machine.beginAsynchronousRead(into: destination, &taking).finished)
        #expect(taken.count == 16 && !taken.refill, "nothing is read ahead to be copied")
        #expect(H.events(taking) == [.hasBytesAvailable], "a read finds bytes without waiting")
        #expect(machine.refill == .idle && machine.fillsOnDemandNow)
        return machine
    }

    @Test func aReadWithRoomForABlockFillsItsOwnBufferAndNothingIsCopied() throws {
        var machine = try Self.drained()
        let destination = H.buffer(20)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        #expect(step.region.baseAddress == destination.baseAddress && step.region.count == 20)
        #expect(step.offset == 16)
        #expect(machine.refill == .running && !machine.fillsOnDemandNow)
        let stop = machine.refillReturned(H.fill(step.region, 20, with: 9), region: step.region, at: 16,
                                          generation: step.generation, &effects)
        #expect(stop.isStop)
        #expect(H.events(effects).isEmpty, "the bytes are the reader's, not the cache's")
        #expect(machine.cache.count == 0)
        var ending = StreamEffects()
        #expect(machine.endReaderFill(into: destination, &ending) == 20)
        #expect(machine.offset == 36)
        #expect(H.events(ending) == [.hasBytesAvailable])
        #expect(machine.readerFill == nil)
    }

    @Test func aSmallerReadFillsTheCacheAndCopiesFromIt() throws {
        var machine = try Self.drained()
        let destination = H.buffer(10)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        #expect(step.region.baseAddress == machine.cache.storage.baseAddress && step.region.count == 16)
        _ = machine.refillReturned(H.fill(step.region, 16, with: 5), region: step.region, at: 16,
                                   generation: step.generation, &effects)
        #expect(machine.endReaderFill(into: destination, &effects) == 10)
        #expect(destination.allSatisfy { $0 == 5 })
        #expect(machine.cache.count == 6)
        #expect(machine.offset == 26)
    }

    @Test func theLastBytesAreConfirmedBeforeTheReaderGetsThem() throws {
        var machine = try Self.drained(length: 20)
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        #expect(step.region.count == 4, "limited to what is left of the blob")
        let confirm = try #require(machine.refillReturned(H.fill(step.region, 4), region: step.region, at: 16,
                                                         generation: step.generation, &effects).confirm)
        #expect(confirm.offset == 20 && confirm.confirmed == .bytes(4))
        let changed = BlobStreamError.sourceChanged(resource: H.resource, offset: 20, reason: "rewritten")
        _ = machine.refillConfirmed(changed, confirm.confirmed, generation: confirm.generation, &effects)
        #expect(machine.endReaderFill(into: destination, &effects) == -1, "a changed source delivers none of them")
        #expect(machine.error == changed)
        #expect(machine.offset == 16)

        var good = try Self.drained(length: 20)
        var goodEffects = StreamEffects()
        let last = try #require(good.beginAsynchronousRead(into: destination, &goodEffects).fill?.read)
        let goodConfirm = try #require(good.refillReturned(H.fill(last.region, 4), region: last.region, at: 16,
                                                          generation: last.generation, &goodEffects).confirm)
        _ = good.refillConfirmed(nil, goodConfirm.confirmed, generation: goodConfirm.generation, &goodEffects)
        var ending = StreamEffects()
        #expect(good.endReaderFill(into: destination, &ending) == 4)
        #expect(H.events(ending) == [.endEncountered])
        #expect(good.phase == .atEnd && !good.fillsOnDemandNow)
    }

    @Test func aSeekDuringTheFillDeliversTheNewOffsetsBytesNeverTheOldOnes() throws {
        var machine = try Self.drained()
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        _ = machine.seek(to: 50, &effects)
        #expect(effects.scheduleRefill == nil, "the running fill reads again itself")
        let again = machine.refillReturned(H.fill(step.region, 16, with: 1), region: step.region, at: 16,
                                           generation: step.generation, &effects)
        #expect(again.isNext)
        let reread = try #require(machine.nextRefillStep().read)
        #expect(reread.offset == 50 && reread.region.baseAddress == machine.cache.storage.baseAddress)
        _ = machine.refillReturned(H.fill(reread.region, 16, with: 2), region: reread.region, at: 50,
                                   generation: reread.generation, &effects)
        #expect(machine.endReaderFill(into: destination, &effects) == 16)
        #expect(destination.allSatisfy { $0 == 2 })
        #expect(machine.offset == 66)
    }

    /// A seek from another thread after the fill returned and before the read took its bytes.
    @Test func aSeekAfterTheFillReturnedDropsTheBytesItRead() throws {
        var machine = try Self.drained()
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        _ = machine.refillReturned(H.fill(step.region, 16, with: 1), region: step.region, at: 16,
                                   generation: step.generation, &effects)
        _ = machine.seek(to: 50, &effects)
        #expect(machine.endReaderFill(into: destination, &effects) == -1, "nothing read at 50 yet")
        #expect(machine.error == .wouldBlock(offset: 50))
        #expect(machine.offset == 50)
        #expect(effects.scheduleRefill != nil, "the seek reads ahead at its offset")
    }

    @Test func aCloseDuringTheFillEndsTheReadWithClosedAndClosesTheSourceAfterIt() throws {
        var machine = try Self.drained()
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        var closing = StreamEffects()
        machine.close(&closing)
        #expect(closing.closeSource == nil, "not under the read in flight")
        var answer = StreamEffects()
        let next = machine.refillReturned(H.fill(step.region, 16), region: step.region, at: 16,
                                          generation: step.generation, &answer)
        #expect(answer.closeSource != nil)
        #expect(next.isNext && machine.nextRefillStep().isStop)
        #expect(machine.endReaderFill(into: destination, &answer) == -1)
        #expect(machine.error == .closed)
    }

    @Test func anImmediateSourceThatWouldBlockAfterAllParksTheRefill() throws {
        var machine = try Self.drained()
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let step = try #require(machine.beginAsynchronousRead(into: destination, &effects).fill?.read)
        let parked = machine.refillReturned(.wouldBlock, region: step.region, at: 16, generation: step.generation, &effects)
        #expect(parked.isStop && machine.refill == .parked)
        #expect(machine.endReaderFill(into: destination, &effects) == -1)
        #expect(machine.error == .wouldBlock(offset: 16))
        let fillsOnDemand = machine.fillsOnDemandNow
        #expect(!fillsOnDemand)
        var signalled = StreamEffects()
        machine.sourceSignalled(&signalled)
        #expect(signalled.scheduleRefill != nil, "the wake-up refills the cache as for any source")
    }

    @Test func takingABlockAfterReadsLeftTheCacheEmptyQueuesTheRefillForTheConsumer() throws {
        var machine = try Self.drained()
        var effects = StreamEffects()
        guard case .wait = machine.takeBlock(&effects) else {
            Issue.record("an empty cache has no block yet")
            return
        }
        #expect(machine.refill == .queued(ticket: 2))
        #expect(effects.scheduleRefill == nil, "the consumer that found nothing claims it at once: no thread is woken for it")
        let claimed = machine.claimQueuedRefill(nil)
        #expect(claimed)
    }

    @Test func aSourceThatIsNotImmediateStillReadsAhead() throws {
        var machine = try StreamMachineRefillTests.filled(16)
        let destination = H.buffer(16)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        let taken = try #require(machine.beginAsynchronousRead(into: destination, &effects).finished)
        #expect(taken.count == 16 && taken.refill)
        let fillsOnDemand = machine.fillsOnDemandNow
        #expect(!fillsOnDemand)
    }
}
