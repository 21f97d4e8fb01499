import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The events that follow a seek, as BlobInputStream documents them: a seek that changes
/// nothing posts nothing; a seek back from the end reopens readability; reaching the end again
/// is a new pass and posts `.endEncountered` again; a seek past a known end is refused.
@Suite struct SeekEventTests {
    static let bytes = (0..<100).map { UInt8($0) }

    /// A stream with a recorder on a queue, opened; `flush` returns once every event posted so
    /// far has been delivered.
    struct Fixture {
        let stream: BlobInputStream
        let recorder = EventRecorder()
        let queue = DispatchQueue(label: "seek-events")

        init(mode: BlobInputStream.Mode, hidesLength: Bool = false) {
            self.init(stream: BlobInputStream(
                dataSource: ScriptedDataSource(bytes: SeekEventTests.bytes, hidesLength: hidesLength), mode: mode))
        }

        init(stream: BlobInputStream) {
            self.stream = stream
            stream.delegate = recorder
            stream.delegateQueue = queue
            stream.open()
        }

        func flush() { queue.sync {} }

        /// Reads to the end, the way each mode is read, and returns the bytes.
        func readToEnd() -> [UInt8] {
            var output: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 30)
            let deadline = Date(timeIntervalSinceNow: 10)
            while stream.streamStatus != .atEnd && stream.streamStatus != .error && Date() < deadline {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count > 0 { output.append(contentsOf: buffer[0..<count]) } else if count < 0 { Thread.sleep(forTimeInterval: 0.001) }
            }
            return output
        }

        func seek(_ offset: Int) -> Bool {
            stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey)
        }
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func seeksAtAndPastTheEndPostNothingNew(mode: BlobInputStream.Mode, hidesLength: Bool) {
        let fixture = Fixture(mode: mode, hidesLength: hidesLength)
        defer { fixture.stream.close() }
        #expect(fixture.readToEnd() == Self.bytes)
        #expect(fixture.recorder.wait(for: .endEncountered))
        fixture.flush()
        let before = fixture.recorder.all

        // Already at the end: seeking there changes nothing and says nothing.
        #expect(fixture.seek(100))
        // Past the end, now known (announced, or found by the pass that ended): refused.
        #expect(!fixture.seek(101))
        #expect(!fixture.seek(1_000))
        Thread.sleep(forTimeInterval: 0.05)
        fixture.flush()
        #expect(fixture.recorder.all == before)
        #expect(fixture.recorder.count(.endEncountered) == 1)
        #expect(fixture.stream.streamStatus == .atEnd)
        #expect(fixture.stream.offset == 100)
        #expect(!fixture.stream.hasBytesAvailable)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func aSeekBackFromTheEndStartsANewPass(mode: BlobInputStream.Mode, hidesLength: Bool) {
        let fixture = Fixture(mode: mode, hidesLength: hidesLength)
        defer { fixture.stream.close() }
        #expect(fixture.readToEnd() == Self.bytes)
        #expect(fixture.recorder.wait(for: .endEncountered))
        fixture.flush()
        let available = fixture.recorder.count(.hasBytesAvailable)

        #expect(fixture.seek(40))
        #expect(fixture.stream.streamStatus == .open)
        #expect(eventually { fixture.recorder.count(.hasBytesAvailable) == available + 1 })
        #expect(eventually { fixture.stream.hasBytesAvailable })
        #expect(fixture.readToEnd() == Array(Self.bytes[40...]))
        #expect(eventually { fixture.recorder.count(.endEncountered) == 2 })
        #expect(fixture.recorder.count(.errorOccurred) == 0)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aSeekToTheEndEndsThePassOnce(mode: BlobInputStream.Mode) {
        let fixture = Fixture(mode: mode)
        defer { fixture.stream.close() }
        #expect(fixture.recorder.wait(for: .openCompleted))
        #expect(fixture.seek(100))
        #expect(fixture.stream.streamStatus == .atEnd)
        #expect(fixture.seek(100))
        #expect(!fixture.seek(101))
        #expect(fixture.recorder.wait(for: .endEncountered))
        Thread.sleep(forTimeInterval: 0.05)
        fixture.flush()
        #expect(fixture.recorder.count(.endEncountered) == 1)
        var byte: UInt8 = 0
        #expect(fixture.stream.read(&byte, maxLength: 1) == 0)
    }

    /// A blob of unknown length read to its end, then read again from 0 after the source began
    /// answering `changed` from `from` on: the second pass's bytes, and the stream's error.
    func secondPass(mode: BlobInputStream.Mode, changedFrom from: Int64, answering changed: BlobSourceReadResult) -> ([UInt8], BlobInputStream) {
        let source = ProbeDataSource(bytes: Self.bytes, hidesLength: true, preferredBlockSize: 10)
        let switched = Locked(false)
        source.onRead { offset, _ in switched.value && offset >= from ? .answer(changed) : .serve }
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 10
        let fixture = Fixture(stream: stream)
        #expect(fixture.readToEnd() == Self.bytes)
        switched.value = true
        #expect(fixture.seek(0))
        let second = fixture.readToEnd()
        #expect(eventually { stream.streamStatus == .error })
        return (second, stream)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aLaterPassThatEndsBeforeTheEndFoundEarlierIsUnexpected(mode: BlobInputStream.Mode) {
        // The source cannot announce a length; the first pass finds it, and the second pass
        // meets an end at 60, as if the blob had shrunk.
        let (second, stream) = secondPass(mode: mode, changedFrom: 60, answering: .end)
        defer { stream.close() }
        #expect(second == Array(Self.bytes[0..<60]))
        #expect(stream.blobError == .unexpectedEnd(resource: "probe", offset: 60, expectedLength: 100))
    }

    /// The mirror case: the second pass finds bytes past the end the first one found, as if the
    /// blob had grown. It used to stop at the old end and report a clean end, short.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aLaterPassThatGoesOnPastTheEndFoundEarlierFails(mode: BlobInputStream.Mode) {
        let (second, stream) = secondPass(mode: mode, changedFrom: 100, answering: .read(10))
        defer { stream.close() }
        #expect(second == Self.bytes)
        guard case .sourceChanged("probe", 100, let reason)? = stream.blobError else {
            Issue.record("\(String(describing: stream.blobError))")
            return
        }
        #expect(reason.contains("earlier pass"), "\(reason)")
    }
}
