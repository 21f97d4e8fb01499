import Foundation
import Testing
@testable import BlobStream

/// ``StreamMachine``'s open, reopen and close transitions, one at a time, without threads.
@Suite struct StreamMachineLifecycleTests {
    typealias H = MachineHarness

    @Test func anOpenStartsOnceAndCountsItsSourceCall() {
        var machine = StreamMachine(mode: .synchronous, resource: H.resource)
        #expect(machine.status == .notOpen)
        let r1 = machine.open(blockSize: 8)
        #expect(r1)
        #expect(machine.status == .opening)
        let reopened = machine.open(blockSize: 8)
        #expect(!reopened)
        let r2 = machine.startOpenCall()
        #expect(r2 == 0)
        #expect(machine.source.callsInFlight == 1)
        var effects = StreamEffects()
        machine.endSourceCall(&effects)
        #expect(machine.source.callsInFlight == 0)
        #expect(effects.closeSource == nil)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aCompletedOpenAnnouncesWhatFollows(mode: BlobInputStream.Mode) {
        var machine = StreamMachine(mode: mode, resource: H.resource)
        _ = machine.open(blockSize: 8)
        _ = machine.startOpenCall()
        var effects = StreamEffects()
        machine.openCompleted(.success(BlobSourceDescription(length: 10)), &effects)
        #expect(machine.status == .open)
        #expect(machine.source.isOpen == true)
        #expect(effects.wake)
        switch mode {
        case .synchronous:
            #expect(H.events(effects) == [.openCompleted, .hasBytesAvailable])
            #expect(effects.scheduleRefill == nil)
        case .asynchronous:
            #expect(H.events(effects) == [.openCompleted])
            #expect(effects.scheduleRefill == 1)
            #expect(machine.refill == .queued(ticket: 1))
        }
    }

    @Test func anEmptyBlobEndsAtItsOpen() {
        var effects = StreamEffects()
        var machine = StreamMachine(mode: .asynchronous, resource: H.resource)
        _ = machine.open(blockSize: 8)
        machine.openCompleted(.success(BlobSourceDescription(length: 0)), &effects)
        #expect(machine.status == .atEnd)
        #expect(H.events(effects) == [.openCompleted, .endEncountered])
        #expect(machine.refill == .idle)
    }

    @Test func aFailedOpenFailsTheStream() {
        var machine = StreamMachine(mode: .synchronous, resource: H.resource)
        _ = machine.open(blockSize: 8)
        var effects = StreamEffects()
        machine.openCompleted(.failure(.notFound(resource: "x")), &effects)
        #expect(machine.phase == .failed(.notFound(resource: "x")))
        #expect(machine.error == .notFound(resource: "x"))
        #expect(H.events(effects) == [.errorOccurred])
        #expect(effects.closeSource == nil)
    }

    @Test func aStartOffsetPastTheEndFailsAndClosesTheSource() {
        var machine = StreamMachine(mode: .synchronous, resource: H.resource)
        var effects = StreamEffects()
        let r3 = machine.seek(to: 50, &effects)
        #expect(r3 == nil)
        _ = machine.open(blockSize: 8)
        let r4 = machine.startOpenCall()
        #expect(r4 == 50)
        machine.openCompleted(.success(BlobSourceDescription(length: 10)), &effects)
        #expect(machine.error == .invalidOffset(resource: H.resource, offset: 50, length: 10))
        #expect(effects.closeSource == false)
    }

    @Test func anOpenCompletedAfterCloseClosesTheSourceForGood() {
        var machine = StreamMachine(mode: .synchronous, resource: H.resource)
        _ = machine.open(blockSize: 8)
        var effects = StreamEffects()
        machine.close(&effects)
        #expect(effects.closeSource == true)
        #expect(effects.stopEvents)
        var late = StreamEffects()
        machine.openCompleted(.success(BlobSourceDescription(length: 10)), &late)
        #expect(late.closeSource == true)
        #expect(H.events(late).isEmpty)
        let r5 = machine.startOpenCall()
        #expect(r5 == nil)
    }

    @Test func aTimedOutOpenFailsAndClosesUnlessClosedMeanwhile() {
        var machine = StreamMachine(mode: .synchronous, resource: H.resource)
        _ = machine.open(blockSize: 8)
        let timedOut = BlobStreamError.timedOut(resource: H.resource, operation: "open", seconds: 1)
        var effects = StreamEffects()
        machine.openWaitFailed(timedOut, &effects)
        #expect(machine.error == timedOut)
        #expect(effects.closeSource == false)

        var closedFirst = StreamMachine(mode: .synchronous, resource: H.resource)
        _ = closedFirst.open(blockSize: 8)
        var closing = StreamEffects()
        closedFirst.close(&closing)
        var after = StreamEffects()
        closedFirst.openWaitFailed(.closed, &after)
        #expect(after.closeSource == nil)
        #expect(H.events(after).isEmpty)
    }

    @Test func aCloseDuringASourceCallIsDeferredToItsEnd() {
        var machine = H.opened(.synchronous)
        machine.beginSourceCall()
        var effects = StreamEffects()
        machine.close(&effects)
        #expect(machine.status == .closed)
        #expect(effects.closeSource == nil)
        #expect(effects.closeIsPending)
        #expect(machine.source.closeDeferred == true)
        var end = StreamEffects()
        machine.endSourceCall(&end)
        #expect(end.closeSource == true)
        #expect(machine.source.closeDeferred == false)
    }

    @Test func aClosedStreamKeepsTheErrorThatEndedIt() {
        var machine = H.opened(.synchronous)
        var effects = StreamEffects()
        machine.fail(.closed, &effects)
        machine.fail(.notOpen, &effects)
        #expect(machine.error == .closed)
        machine.close(&effects)
        #expect(machine.phase == .closed(failure: .closed))
        #expect(machine.error == .closed)
        var again = StreamEffects()
        machine.close(&again)
        #expect(!again.stopEvents)
    }

    @Test func aReopenClosesTheStaleSourceAndMatchesTheFirstOpen() {
        var machine = H.opened(.synchronous, length: 100, version: "v1")
        var effects = StreamEffects()
        let start = machine.generation
        let r6 = machine.beginReopen(maxReopens: 5, &effects)
        #expect(r6 == .success(0))
        #expect(effects.closeSource == false)
        #expect(machine.reopen == .running)
        #expect(machine.generation == start + 1)
        #expect(machine.source.isOpen == false)
        machine.endSourceCall(&effects)
        var done = StreamEffects()
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v1")), &done)
        #expect(machine.source.isOpen == true)
        #expect(machine.reopen == .idle)
        #expect(done.wake)
    }

    @Test(arguments: [
        BlobSourceDescription(length: 100, version: "v2"),
        BlobSourceDescription(length: 100, version: nil),
        BlobSourceDescription(length: 99, version: "v1"),
        BlobSourceDescription(length: nil, version: "v1"),
    ])
    func aReopenOnAnotherVersionFailsAndClosesIt(reopened: BlobSourceDescription) {
        var machine = H.opened(.synchronous, length: 100, version: "v1")
        var effects = StreamEffects()
        _ = machine.beginReopen(maxReopens: 5, &effects)
        machine.endSourceCall(&effects)
        var done = StreamEffects()
        machine.reopenCompleted(.success(reopened), &done)
        #expect(done.closeSource == false)
        #expect(machine.source.isOpen == false)
        guard case .sourceChanged = machine.takeReopenFailure() else {
            Issue.record("expected sourceChanged, got \(String(describing: machine.reopen))")
            return
        }
        #expect(machine.reopen == .idle)
    }

    @Test func aReopenOnAnotherVersionDuringACallClosesWhenTheCallEnds() {
        var machine = H.opened(.asynchronous)
        var effects = StreamEffects()
        _ = machine.beginReopen(maxReopens: 5, &effects)
        var done = StreamEffects()
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v2")), &done)
        #expect(done.closeSource == nil)
        #expect(machine.source.closeDeferred == true)
        #expect(H.events(done) == [.errorOccurred])
        var end = StreamEffects()
        machine.endSourceCall(&end)
        #expect(end.closeSource == false)
    }

    @Test func reopensWithoutProgressAreBounded() {
        var machine = H.opened(.synchronous)
        var effects = StreamEffects()
        for _ in 0..<2 {
            let r7 = machine.beginReopen(maxReopens: 2, &effects)
            #expect(r7 == .success(0))
            machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v1")), &effects)
        }
        let r8 = machine.beginReopen(maxReopens: 2, &effects)
        #expect(r8
                == .failure(.invalidatedTooOften(resource: H.resource, offset: 0, attempts: 3)))
        machine.madeProgress()
        let r9 = machine.beginReopen(maxReopens: 2, &effects)
        #expect(r9 == .success(0))
    }

    @Test func aReopenCompletedAfterCloseClosesTheSourceForGood() {
        var machine = H.opened(.synchronous)
        var effects = StreamEffects()
        _ = machine.beginReopen(maxReopens: 5, &effects)
        machine.endSourceCall(&effects)
        var closing = StreamEffects()
        machine.close(&closing)
        #expect(machine.reopen == .idle)
        var late = StreamEffects()
        machine.reopenCompleted(.success(BlobSourceDescription(length: 100, version: "v1")), &late)
        #expect(late.closeSource == true)
        #expect(machine.source.isOpen == false)
    }

    @Test func aTurnAdmitsItsHolderAgainAndNoOtherThread() {
        var turn = Turn()
        #expect(turn.admits(1))
        turn.enter(1)
        turn.enter(1)
        #expect(!turn.admits(2))
        let stillHeld = turn.leave()
        #expect(!stillHeld)
        #expect(!turn.admits(2))
        let freed = turn.leave()
        #expect(freed)
        #expect(turn.admits(2))
    }

    @Test func eventsKeepTheirOrderAndTwoClosesAreOneFinalClose() {
        var effects = StreamEffects()
        effects.post(.openCompleted)
        effects.post(.hasBytesAvailable)
        effects.post(.endEncountered)
        #expect(H.events(effects) == [.openCompleted, .hasBytesAvailable, .endEncountered])
        #expect(!effects.hasUnlockedWork)
        effects.closeSource(final: false)
        effects.closeSource(final: true)
        effects.closeSource(final: false)
        #expect(effects.closeSource == true)
        #expect(effects.hasUnlockedWork)
    }
}
