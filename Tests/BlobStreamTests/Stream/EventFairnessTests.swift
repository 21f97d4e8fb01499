import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A stream whose reader never runs dry delivers its events in batches and yields its run loop
/// between them, so other work scheduled on the same loop runs while the stream is read.
@Suite struct EventFairnessTests {
    @Test func aTimerOnTheSameRunLoopFiresBeforeALongReadEnds() throws {
        // 256 MiB of holes: read from the zero page, so the read lasts several batches whatever
        // the machine, without a byte on disk.
        let directory = try TempFiles.makeDirectory(prefix: "fairness")
        defer { TempFiles.remove(directory) }
        let path = directory + "/holes.bin"
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        try #require(fd >= 0 && ftruncate(fd, 256 << 20) == 0)
        close(fd)

        let stream = BlobInputStream(fileAtPath: path, mode: .asynchronous)
        let recorder = EventRecorder()
        let timerFired = Locked(false)
        let firedBeforeEnd = Locked<Bool?>(nil)
        let received = Locked(0)
        let buffer = Locked([UInt8](repeating: 1, count: 64 * 1024))
        recorder.on(.hasBytesAvailable) { stream in
            let count = buffer.mutate { (stream as! InputStream).read(&$0, maxLength: $0.count) }
            let first = received.mutate { total in
                defer { total += max(0, count) }
                return total == 0
            }
            // Scheduled from inside the first delivery, on the loop's own thread: it can only
            // fire once the delivery of the stream's events gives the loop back.
            if first {
                RunLoop.current.add(Timer(timeInterval: 0, repeats: false) { _ in timerFired.value = true }, forMode: .default)
            }
        }
        recorder.on(.endEncountered) { _ in firedBeforeEnd.value = timerFired.value }
        stream.delegate = recorder
        let thread = RunLoopThread(name: "fairness", opening: stream)
        defer { thread.stop() }
        #expect(recorder.wait(for: .endEncountered, timeout: 120))
        stream.close()
        #expect(received.value == 256 << 20)
        #expect(firedBeforeEnd.value == true, "the stream's events held the run loop until the end")
    }
}
