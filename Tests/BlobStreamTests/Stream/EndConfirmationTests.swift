import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `confirmUnchanged(at:)`: asked once per pass, after the last byte has come from the source
/// and before that byte or the end reaches the consumer; a failure replaces the end.
@Suite struct EndConfirmationTests {
    static let bytes = StreamReadingTests.pattern(1000)
    static let rewritten = BlobStreamError.sourceChanged(resource: "probe", offset: 1000, reason: "rewritten in place")

    static func source(hidesLength: Bool, failing: Bool) -> ProbeDataSource {
        let source = ProbeDataSource(bytes: bytes, hidesLength: hidesLength, preferredBlockSize: 100)
        if failing { source.answerConfirm(with: rewritten) }
        return source
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func aFailedConfirmationReplacesTheEnd(mode: BlobInputStream.Mode, hidesLength: Bool) {
        let source = Self.source(hidesLength: hidesLength, failing: true)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 100
        let result = StreamHarness.drain(stream, chunk: 100)
        #expect(result.error == Self.rewritten)
        #expect(stream.streamStatus == .error || stream.streamStatus == .closed)
        // The known length puts the check before the last block reaches the consumer; without
        // a length, the end is known only once the source says so, after the last byte.
        #expect(result.bytes == Array(Self.bytes.prefix(hidesLength ? 1000 : 900)))
        #expect(source.confirmCount == 1)
        #expect(source.calls.contains(.confirm(offset: 1000)))
        #expect(source.violations.isEmpty)
    }

    @Test(arguments: [false, true])
    func aFailedConfirmationReachesARunLoopDelegateAsAnError(hidesLength: Bool) {
        let source = Self.source(hidesLength: hidesLength, failing: true)
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        stream.blockSize = 100
        let recorder = EventRecorder()
        recorder.on(.hasBytesAvailable) { stream in
            var buffer = [UInt8](repeating: 0, count: 100)
            _ = (stream as! InputStream).read(&buffer, maxLength: buffer.count)
        }
        stream.delegate = recorder
        let thread = RunLoopThread(name: "confirm", opening: stream)
        defer { thread.stop() }
        #expect(recorder.wait(for: .errorOccurred))
        #expect(recorder.count(.endEncountered) == 0)
        #expect(stream.blobError == Self.rewritten)
        stream.close()
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [false, true])
    func everyPassToTheEndIsConfirmedOnce(mode: BlobInputStream.Mode, hidesLength: Bool) throws {
        let source = Self.source(hidesLength: hidesLength, failing: false)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        stream.blockSize = 100
        let fixture = SeekEventTests.Fixture(stream: stream)
        defer { stream.close() }
        #expect(fixture.readToEnd() == Self.bytes)
        #expect(source.confirmCount == 1)
        #expect(source.calls.last == .confirm(offset: 1000))

        #expect(fixture.seek(0))
        #expect(fixture.readToEnd() == Self.bytes)
        #expect(stream.streamStatus == .atEnd)
        #expect(source.confirmCount == 2)
        #expect(source.calls.last == .confirm(offset: 1000))
        #expect(source.violations.isEmpty)
    }
}
