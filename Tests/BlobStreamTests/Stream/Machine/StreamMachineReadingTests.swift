import Foundation
import Testing
@testable import BlobStream

/// ``StreamMachine``'s synchronous read steps, one at a time, without threads.
@Suite struct StreamMachineReadingTests {
    typealias H = MachineHarness

    @Test func aReadWithRoomForABlockGoesStraightIntoTheCallersBuffer() throws {
        var machine = H.opened(.synchronous, length: 100, blockSize: 16)
        let destination = H.buffer(32)
        defer { destination.deallocate() }
        let r1 = machine.beginSynchronousRead(into: destination)
        #expect(r1 == nil)
        #expect(machine.status == .reading)
        var effects = StreamEffects()
        let read = try #require(machine.nextReadStep(&effects).read)
        #expect(read.offset == 0)
        #expect(read.region.baseAddress == destination.baseAddress)
        #expect(read.region.count == 32)
        #expect(machine.source.callsInFlight == 1)
        let step = machine.readReturned(H.fill(read.region, 20), &effects)
        #expect(step?.finished == 20)
        #expect(machine.offset == 20)
        #expect(H.events(effects) == [.hasBytesAvailable])
        machine.endSynchronousRead()
        #expect(machine.status == .open)
    }

    @Test func aSmallReadIsServedFromACachedBlockToppedUpWhenItRunsDry() throws {
        var machine = H.opened(.synchronous, length: 100, blockSize: 16)
        let destination = H.buffer(10)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        let first = try #require(machine.nextReadStep(&effects).read)
        #expect(first.region.count == 16)
        #expect(first.region.baseAddress != destination.baseAddress)
        let r2 = machine.readReturned(H.fill(first.region, 16), &effects)
        #expect(r2 == nil)
        let r3 = machine.nextReadStep(&effects)
        #expect(r3.finished == 10)
        machine.endSynchronousRead()
        // 6 bytes are left in the cache: the next read takes them, then tops the cache up.
        _ = machine.beginSynchronousRead(into: destination)
        let second = try #require(machine.nextReadStep(&effects).read)
        #expect(second.offset == 16)
        let r4 = machine.readReturned(H.fill(second.region, 16), &effects)
        #expect(r4 == nil)
        let r5 = machine.nextReadStep(&effects)
        #expect(r5.finished == 10)
        #expect(machine.offset == 20)
    }

    @Test func theLastBytesAreConfirmedBeforeTheConsumerGetsThem() throws {
        var machine = H.opened(.synchronous, length: 20, blockSize: 16)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        let read = try #require(machine.nextReadStep(&effects).read)
        #expect(read.region.count == 20)
        let confirm = machine.readReturned(H.fill(read.region, 20), &effects)
        #expect(confirm?.confirmOffset == 20)
        #expect(machine.offset == 0)
        let done = machine.confirmReturned(nil, &effects)
        #expect(done?.finished == 20)
        #expect(machine.status == .atEnd)
        #expect(H.events(effects) == [.endEncountered])
    }

    @Test func aFailedConfirmationReplacesTheEnd() throws {
        var machine = H.opened(.synchronous, length: nil, blockSize: 16)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        _ = try #require(machine.nextReadStep(&effects).read)
        let r6 = machine.readReturned(.end, &effects)
        #expect(r6?.confirmOffset == 0)
        let changed = BlobStreamError.sourceChanged(resource: H.resource, offset: 0, reason: "rewritten")
        let r7 = machine.confirmReturned(changed, &effects)
        #expect(r7?.finished == -1)
        #expect(machine.error == changed)
        #expect(H.events(effects) == [.errorOccurred])
    }

    @Test func anEndOfUnknownLengthBecomesTheLength() throws {
        var machine = H.opened(.synchronous, length: nil, blockSize: 16)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        let read = try #require(machine.nextReadStep(&effects).read)
        let r8 = machine.readReturned(H.fill(read.region, 5), &effects)
        #expect(r8?.finished == 5)
        machine.endSynchronousRead()
        _ = machine.beginSynchronousRead(into: destination)
        _ = machine.nextReadStep(&effects)
        let r9 = machine.readReturned(.end, &effects)
        #expect(r9?.confirmOffset == 5)
        let r10 = machine.confirmReturned(nil, &effects)
        #expect(r10?.finished == 0)
        #expect(machine.knownLength == 5)
        #expect(machine.status == .atEnd)
    }

    @Test func anEndBeforeTheAnnouncedLengthIsUnexpected() throws {
        var machine = H.opened(.synchronous, length: 100)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        _ = machine.nextReadStep(&effects)
        let r11 = machine.readReturned(.end, &effects)
        #expect(r11?.finished == -1)
        #expect(machine.error == .unexpectedEnd(resource: H.resource, offset: 0, expectedLength: 100))
    }

    @Test func aCountTheBufferCannotHoldFailsTheRead() throws {
        var machine = H.opened(.synchronous, length: 100)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        _ = machine.nextReadStep(&effects)
        let r12 = machine.readReturned(.read(65), &effects)
        #expect(r12?.finished == -1)
        guard case .sourceFailed = machine.error else {
            Issue.record("expected sourceFailed, got \(String(describing: machine.error))")
            return
        }
    }

    @Test func wouldBlockWaitsOnlyWithNothingInHand() throws {
        var machine = H.opened(.synchronous, length: 100, blockSize: 16)
        let destination = H.buffer(10)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        _ = machine.nextReadStep(&effects)
        let r13 = machine.readReturned(.wouldBlock, &effects)
        #expect(r13?.isWaitForSignal == true)
        machine.sourceSignalled(&effects)
        #expect(machine.sourceSignalled == true)
        #expect(effects.wake)
        let r14 = machine.signalWaitEnded(nil, &effects)
        #expect(r14 == nil)
        // The next source read resets the signal, so one during the call is not lost.
        let read = try #require(machine.nextReadStep(&effects).read)
        #expect(machine.sourceSignalled == false)
        let r15 = machine.readReturned(H.fill(read.region, 4), &effects)
        #expect(r15 == nil)
        _ = try #require(machine.nextReadStep(&effects).read)
        let r16 = machine.readReturned(.wouldBlock, &effects)
        #expect(r16?.finished == 4)
    }

    @Test func closeDuringARead() throws {
        var machine = H.opened(.synchronous)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        let read = try #require(machine.nextReadStep(&effects).read)
        var closing = StreamEffects()
        machine.close(&closing)
        #expect(closing.closeSource == nil)
        #expect(closing.closeIsPending)
        // The read returns after the close: its bytes are dropped and the source closes now.
        var after = StreamEffects()
        let r17 = machine.readReturned(H.fill(read.region, 64), &after)
        #expect(r17?.finished == -1)
        #expect(after.closeSource == true)
        #expect(machine.error == .closed)
        #expect(machine.offset == 0)
        machine.endSynchronousRead()
        #expect(machine.status == .closed)
    }

    @Test func aTimedOutWaitFailsTheReadButAClosedOneOnlyReportsTheClose() {
        var machine = H.opened(.synchronous)
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        let timedOut = BlobStreamError.timedOut(resource: H.resource, operation: "read", seconds: 1)
        let r18 = machine.signalWaitEnded(timedOut, &effects)
        #expect(r18?.finished == -1)
        #expect(machine.phase == .failed(timedOut))

        var closed = H.opened(.synchronous)
        _ = closed.beginSynchronousRead(into: destination)
        closed.close(&effects)
        var after = StreamEffects()
        let r19 = closed.signalWaitEnded(.closed, &after)
        #expect(r19?.finished == -1)
        #expect(H.events(after).isEmpty)
        #expect(closed.error == .closed)
    }

    @Test func aStaleSourceIsReopenedAndTheReaderGetsTheReopensFailure() throws {
        var machine = H.opened(.synchronous, version: "v1")
        let destination = H.buffer(64)
        defer { destination.deallocate() }
        var effects = StreamEffects()
        _ = machine.beginSynchronousRead(into: destination)
        _ = machine.nextReadStep(&effects)
        let r20 = machine.readReturned(.invalidated, &effects)
        #expect(r20?.isReopen == true)
        _ = machine.beginReopen(maxReopens: 5, &effects)
        machine.endSourceCall(&effects)
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v2")), &effects)
        let r21 = machine.reopenWaitEnded(nil, &effects)
        #expect(r21?.finished == -1)
        guard case .sourceChanged = machine.error else {
            Issue.record("expected sourceChanged, got \(String(describing: machine.error))")
            return
        }
    }

    @Test func readsBeforeOpenAfterCloseAndAtTheEndAreRefused() {
        let destination = H.buffer(8)
        defer { destination.deallocate() }
        var fresh = StreamMachine(mode: .synchronous, resource: H.resource)
        let r22 = fresh.beginSynchronousRead(into: destination)
        #expect(r22 == -1)
        #expect(fresh.error == .notOpen)
        var ended = H.opened(.synchronous, length: 0)
        let r23 = ended.beginSynchronousRead(into: destination)
        #expect(r23 == 0)
        var closed = H.opened(.synchronous)
        var effects = StreamEffects()
        closed.close(&effects)
        let r24 = closed.beginSynchronousRead(into: destination)
        #expect(r24 == -1)
        #expect(closed.error == .closed)
    }
}
