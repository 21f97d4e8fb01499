import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The one interruptible-stream capability: ``Interrupter`` stops what may be stopped from any
/// thread, leaves other streams alone, and stops a target watched after the interruption.
@Suite struct InterrupterTests {
    static let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) })

    @Test func anInterruptibleStreamIsClosed() {
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        stream.open()
        let interrupter = Interrupter(watching: stream)
        #expect(!interrupter.isInterrupted)
        interrupter.interrupt()
        #expect(interrupter.isInterrupted)
        #expect(stream.streamStatus == .closed)
    }

    @Test func aStreamThatPromisesNothingIsLeftAlone() {
        let stream = InputStream(data: Self.bytes)
        stream.open()
        let interrupter = Interrupter(watching: stream)
        interrupter.interrupt()
        #expect(interrupter.isInterrupted)
        #expect(stream.streamStatus == .open)
        stream.close()
    }

    @Test func aHashingStreamIsInterruptibleWhenItsBaseIs() {
        let base = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        let hashing = HashingInputStream(base)
        hashing.open()
        #expect(hashing.canCloseFromAnyThread)
        Interrupter(watching: hashing).interrupt()
        #expect(base.streamStatus == .closed)
        #expect(!HashingInputStream(InputStream(data: Self.bytes)).canCloseFromAnyThread)
    }

    @Test func aTargetWatchedAfterTheInterruptionIsStoppedAtOnce() {
        let interrupter = Interrupter()
        interrupter.interrupt()
        let stream = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        stream.open()
        interrupter.watch(stream)
        #expect(stream.streamStatus == .closed)
        let calculator = ChecksumCalculator(algorithm: .sha256)
        interrupter.watch(calculator: calculator)
        #expect(throws: BlobStreamError.cancelled) {
            try calculator.digest(of: BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes)))
        }
    }

    @Test func aStreamNoLongerWatchedIsNotClosed() {
        let first = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes))
        first.open()
        let interrupter = Interrupter(watching: first)
        interrupter.watch(nil)
        interrupter.interrupt()
        #expect(first.streamStatus == .open)
        first.close()
    }

    @Test func onlyAnAsynchronousStreamDrivesACalculationByItsEvents() {
        let asynchronous = BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes), mode: .asynchronous)
        #expect(asynchronous.eventDrivingStream === asynchronous)
        #expect(HashingInputStream(asynchronous).eventDrivingStream === asynchronous)
        #expect(BlobInputStream(dataSource: MemoryDataSource(data: Self.bytes)).eventDrivingStream == nil)
        #expect(InputStream(data: Self.bytes).eventDrivingStream == nil)
    }
}
