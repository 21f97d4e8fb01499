import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Event delivery, in the spirit of POSInputStreamLibrary's own suite.
@Suite struct StreamEventTests {
    static let nineBytes = Array("123456789".utf8)

    /// Reads one byte per `hasBytesAvailable` and closes at the end.
    static func oneByteReader(_ recorder: EventRecorder, into sink: Locked<[UInt8]>) {
        recorder.on(.hasBytesAvailable) { stream in
            var byte: UInt8 = 0
            let count = (stream as! InputStream).read(&byte, maxLength: 1)
            if count == 1 { sink.mutate { $0.append(byte) } }
        }
        recorder.on(.endEncountered) { $0.close() }
        recorder.on(.errorOccurred) { $0.close() }
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func nineByteSourceOnCustomModeRunLoop(mode: BlobInputStream.Mode) {
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: Self.nineBytes), mode: mode)
        let recorder = EventRecorder()
        let sink = Locked<[UInt8]>([])
        Self.oneByteReader(recorder, into: sink)
        stream.delegate = recorder
        let thread = RunLoopThread(name: "checksum", mode: RunLoop.Mode("CustomRunLoopMode"), opening: stream)
        defer { thread.stop() }
        #expect(recorder.wait(for: .endEncountered))
        #expect(recorder.count(.openCompleted) == 1)
        #expect(recorder.count(.hasBytesAvailable) == 9)
        #expect(recorder.count(.endEncountered) == 1)
        #expect(recorder.all.count == 11)
        #expect(recorder.all.first == .openCompleted)
        #expect(recorder.threads == [ObjectIdentifier(thread.thread)])
        #expect(sink.value == Self.nineBytes)
        #expect(eventually { stream.streamStatus == .closed })
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func emptySourceOpensAndEnds(mode: BlobInputStream.Mode) {
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: []), mode: mode)
        let recorder = EventRecorder()
        stream.delegate = recorder
        let thread = RunLoopThread(name: "empty", opening: stream)
        defer { thread.stop() }
        #expect(recorder.wait(for: .endEncountered))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(recorder.all == [.openCompleted, .endEncountered])
        #expect(stream.streamStatus == .atEnd)
        #expect(!stream.hasBytesAvailable)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == 0)
        #expect(stream.streamError == nil)
    }

    @Test func noEventsWithoutRunLoopOrQueue() {
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: Self.nineBytes))
        let recorder = EventRecorder()
        stream.delegate = recorder
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(stream.read(&buffer, maxLength: 16) == 9)
        #expect(stream.read(&buffer, maxLength: 16) == 0)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(recorder.all.isEmpty)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func exactlyOneErrorEventWhenOpenFails(mode: BlobInputStream.Mode) {
        let source = ScriptedDataSource(bytes: Self.nineBytes)
        source.openBehaviour = .fail(.permissionDenied(resource: "scripted"))
        let stream = BlobInputStream(dataSource: source, mode: mode)
        let recorder = EventRecorder()
        stream.delegate = recorder
        stream.delegateQueue = DispatchQueue(label: "events")
        stream.open()
        #expect(recorder.wait(for: .errorOccurred))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(recorder.all == [.errorOccurred])
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .permissionDenied(resource: "scripted"))
        #expect((stream.streamError as NSError?)?.domain == "BlobStreamError")
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func dispatchQueueDelivery(mode: BlobInputStream.Mode) {
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: bytes), mode: mode)
        let recorder = EventRecorder()
        let sink = Locked<[UInt8]>([])
        let queue = DispatchQueue(label: "delegate-queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let onQueue = Locked<[UInt8]>([])
        recorder.on(.hasBytesAvailable) { stream in
            onQueue.mutate { $0.append(DispatchQueue.getSpecific(key: key) == 7 ? 1 : 0) }
            var buffer = [UInt8](repeating: 0, count: 1000)
            let count = (stream as! InputStream).read(&buffer, maxLength: buffer.count)
            if count > 0 { sink.mutate { $0.append(contentsOf: buffer[0..<count]) } }
        }
        recorder.on(.endEncountered) { $0.close() }
        stream.delegate = recorder
        stream.delegateQueue = queue
        stream.open()
        #expect(recorder.wait(for: .endEncountered))
        #expect(sink.value == bytes)
        #expect(!onQueue.value.contains(0))
        #expect(recorder.count(.openCompleted) == 1)
        #expect(recorder.count(.endEncountered) == 1)
        #expect(recorder.count(.errorOccurred) == 0)
    }

    @Test func noEventsAfterClose() {
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: Self.nineBytes))
        let recorder = EventRecorder()
        recorder.on(.hasBytesAvailable) { $0.close() }
        stream.delegate = recorder
        stream.delegateQueue = DispatchQueue(label: "events")
        stream.open()
        #expect(recorder.wait(for: .hasBytesAvailable))
        #expect(eventually { stream.streamStatus == .closed })
        Thread.sleep(forTimeInterval: 0.1)
        #expect(recorder.all == [.openCompleted, .hasBytesAvailable])
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
        #expect(stream.blobError == .closed)
    }

    @Test func closeBeforeOpenDoesNothing() {
        let stream = BlobInputStream(dataSource: ScriptedDataSource(bytes: Self.nineBytes))
        stream.close()
        #expect(stream.streamStatus == .notOpen)
        stream.open()
        #expect(stream.streamStatus == .open)
        stream.close()
        #expect(stream.streamStatus == .closed)
        stream.close()
        #expect(stream.streamStatus == .closed)
        stream.open()
        #expect(stream.streamStatus == .closed)
    }

    @Test func asynchronousOpenReportsOpeningThenCompletes() {
        let source = ScriptedDataSource(bytes: Self.nineBytes)
        source.openBehaviour = .later(delay: 0.05)
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        let recorder = EventRecorder()
        stream.delegate = recorder
        stream.delegateQueue = DispatchQueue(label: "events")
        stream.open()
        #expect(stream.streamStatus == .opening)
        #expect(!stream.hasBytesAvailable)
        var byte: UInt8 = 0
        #expect(stream.read(&byte, maxLength: 1) == -1)
        #expect(stream.blobError == .notOpen)
        #expect(recorder.wait(for: .hasBytesAvailable))
        #expect(recorder.all.first == .openCompleted)
        #expect(stream.hasBytesAvailable)
        #expect(stream.read(&byte, maxLength: 1) == 1)
        #expect(byte == UInt8(ascii: "1"))
    }

    @Test func asynchronousModeFiresEventsAsBytesArrive() {
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let source = ScriptedDataSource(bytes: bytes, preferredBlockSize: 16 * 1024)
        source.wouldBlockDelay = 0.002
        let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
        let recorder = EventRecorder()
        let sink = Locked<[UInt8]>([])
        recorder.on(.hasBytesAvailable) { stream in
            var buffer = [UInt8](repeating: 0, count: 5000)
            let count = (stream as! InputStream).read(&buffer, maxLength: buffer.count)
            if count > 0 { sink.mutate { $0.append(contentsOf: buffer[0..<count]) } }
        }
        stream.delegate = recorder
        stream.delegateQueue = DispatchQueue(label: "events")
        stream.open()
        #expect(recorder.wait(for: .endEncountered))
        #expect(sink.value == bytes)
        #expect(recorder.count(.errorOccurred) == 0)
    }
}
