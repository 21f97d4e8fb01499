import BlobStream
import BlobTestSupport
import Foundation
import Synchronization
import Testing

/// Hundreds of asynchronous streams share a bounded set of threads: a stream's background work
/// must not cost a thread of its own.
@Suite struct StreamThreadTests {
    @Test func twoHundredFiftySixAsynchronousStreamsOnOneQueueStayWithinABoundedNumberOfThreads() throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        let size = 2 << 20
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 21)

        let sampler = ThreadSampler()
        let events = DispatchQueue(label: "StreamThreadTests.events")
        let readers = (0..<256).map { _ in CountingReader() }
        let streams = readers.map { reader in
            let stream = BlobInputStream(fileAtPath: path, mode: .asynchronous)
            stream.delegate = reader
            stream.delegateQueue = events
            return stream
        }
        streams.forEach { $0.open() }
        for reader in readers { #expect(reader.done.wait(timeout: .now() + 120) == .success) }
        streams.forEach { $0.close() }
        let growth = sampler.stop()

        #expect(readers.allSatisfy { $0.total == size && $0.failure == nil })
        // Before the fix, every stream's serial work queue got an overcommitted thread of its
        // own: about 245 threads for 256 streams. The bound leaves room for tests running in
        // parallel in this process.
        #expect(growth <= 64, "\(growth) more threads at peak for 256 streams (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    }

    @Test func concurrentAsyncChecksumsOfAsynchronousStreamsStayWithinABoundedNumberOfThreads() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 8 << 20, seed: 22)
        var reference = ChecksumAlgorithm.crc32.makeChecksum()
        reference.update(TempFiles.pseudoRandomBytes(count: 8 << 20, seed: 22))

        let sampler = ThreadSampler()
        let digests = try await withThrowingTaskGroup(of: ChecksumDigest.self) { group in
            for _ in 0..<256 {
                group.addTask {
                    try await ChecksumCalculator(algorithm: .crc32).digest(of: BlobInputStream(fileAtPath: path, mode: .asynchronous))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let growth = sampler.stop()
        #expect(digests.count == 256 && digests.allSatisfy { $0 == reference.finalize() })
        // Each calculation's events went to a private serial queue of its own, with a thread of
        // its own when many ran at once.
        #expect(growth <= 64, "\(growth) more threads at peak for 256 checksums")
    }
}

/// Samples the process's thread count on a thread of its own until stopped.
private final class ThreadSampler: @unchecked Sendable {
    private let before = threadCount()
    private let peak: Atomic<Int>
    private let sampling = Atomic(true)
    private let finished = DispatchSemaphore(value: 0)

    init() {
        peak = Atomic(before)
        let thread = Thread { [self] in
            while sampling.load(ordering: .relaxed) {
                let now = threadCount()
                if now > peak.load(ordering: .relaxed) { peak.store(now, ordering: .relaxed) }
                usleep(200)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops sampling; returns how many more threads there were at the peak than at the start.
    func stop() -> Int {
        sampling.store(false, ordering: .relaxed)
        finished.wait()
        return peak.load(ordering: .relaxed) - before
    }
}

/// The threads of this process now.
private func threadCount() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

/// Reads whatever is available on every `hasBytesAvailable`; only ever called on one queue.
private final class CountingReader: NSObject, StreamDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private(set) var total = 0
    private(set) var failure: BlobStreamError?

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let stream = aStream as! BlobInputStream
        switch eventCode {
        case .hasBytesAvailable:
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count > 0 { total += count }
        case .endEncountered:
            done.signal()
        case .errorOccurred:
            failure = stream.blobError
            done.signal()
        default:
            break
        }
    }
}
