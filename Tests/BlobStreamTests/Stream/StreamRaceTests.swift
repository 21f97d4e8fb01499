import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Wake-ups that land together with `close()` or a seek: the stream must look at its status
/// after every wait, before it touches its source again.
@Suite struct StreamRaceTests {
    static let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }

    /// A reader blocked on `wouldBlock`; the source's `whenReadable` and `close()` both land
    /// before the reader takes the lock back. Timing decides whether a round reaches that
    /// window, so the test runs many rounds; before the fix nearly every one read the closed
    /// source.
    @Test func aSignalAndACloseTogetherNeverLeadToAReadOfTheClosedSource() {
        for round in 0..<200 {
            let source = ProbeDataSource(bytes: Self.bytes)
            let pending = Locked<(@Sendable () -> Void)?>(nil)
            let parked = DispatchSemaphore(value: 0)
            source.onRead { _, whenReadable in
                if pending.value == nil {
                    pending.value = whenReadable
                    parked.signal()
                }
                return .answer(.wouldBlock)
            }
            let stream = BlobInputStream(dataSource: source)
            stream.open()
            let reader = BackgroundRead(stream, count: 10)
            parked.wait()
            // Let the reader reach its wait; a round where it has not yet is merely harmless.
            Thread.sleep(forTimeInterval: 0.001)
            pending.value?()
            stream.close()
            #expect(reader.wait(timeout: 10) == -1)
            #expect(stream.blobError == .closed)
            #expect(source.violations.isEmpty, "round \(round): \(source.violations)")
            if !source.violations.isEmpty { return }
        }
    }

    /// `close()` while a synchronous `open()` waits for a source that never answers: the
    /// source is closed once, by `close()`, and not a second time by the waking opener.
    @Test func closeDuringASynchronousOpenClosesTheSourceOnce() {
        let source = ScriptedDataSource(bytes: Self.bytes)
        source.openBehaviour = .never
        let stream = BlobInputStream(dataSource: source)
        let box = Unchecked(stream)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.value.open()
            finished.signal()
        }
        #expect(eventually { source.openCount == 1 })
        Thread.sleep(forTimeInterval: 0.01)
        stream.close()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(stream.streamStatus == .closed)
        #expect(source.closeCount == 1)
    }

    /// A synchronous open times out and closes the source (slowly); `close()` meanwhile must not
    /// close it a second time at once: the source sees one call at a time, closes included.
    @Test func closeAfterATimedOutOpenNeverOverlapsTheOpenersClose() {
        let source = ProbeDataSource(bytes: Self.bytes)
        source.completeOpens(false)
        source.slowCloses(by: 0.3)
        let stream = BlobInputStream(dataSource: source)
        stream.openTimeout = 0.05
        let box = Unchecked(stream)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.value.open()
            finished.signal()
        }
        #expect(eventually { stream.streamStatus == .error })
        #expect(eventually { source.calls.contains(.close) })
        stream.close()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(stream.blobError == .timedOut(resource: "probe", operation: "open", seconds: 0.05))
        #expect(source.violations.isEmpty)
    }
}

/// Seeks in asynchronous mode while a refill waits for the source.
@Suite struct AsynchronousSeekTests {
    /// The source never signals for offset 0; a seek to 500 must read there at once instead of
    /// waiting for a wake-up that belongs to the old offset.
    @Test func aSeekDuringAWaitForTheSourceReadsTheNewOffsetAtOnce() {
        let bytes = StreamRaceTests.bytes
        let source = ProbeDataSource(bytes: bytes)
        let parked = Locked<(@Sendable () -> Void)?>(nil)
        source.onRead { offset, whenReadable in
            guard offset == 0 else { return .serve }
            parked.value = whenReadable
            return .answer(.wouldBlock)
        }
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        let recorder = EventRecorder()
        stream.delegate = recorder
        stream.delegateQueue = DispatchQueue(label: "seek-during-wait")
        stream.open()
        defer { stream.close() }
        #expect(eventually { parked.value != nil })
        #expect(!stream.hasBytesAvailable)

        #expect(stream.setProperty(NSNumber(value: 500), forKey: .fileCurrentOffsetKey))
        #expect(eventually(timeout: 5) { stream.hasBytesAvailable })
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(stream.read(&buffer, maxLength: 1000) == 500)
        #expect(Array(buffer[0..<500]) == Array(bytes[500...]))
        #expect(recorder.wait(for: .endEncountered, timeout: 5))

        // The old wake-up, arriving late, changes nothing and reads nothing at the old offset.
        let readsBefore = source.reads.count
        parked.value?()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(stream.streamStatus == .atEnd)
        #expect(source.reads.count == readsBefore)
        #expect(source.violations.isEmpty)
    }
}
