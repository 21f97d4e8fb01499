import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
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

        let threads = ThreadRecord()
        let events = DispatchQueue(label: "StreamThreadTests.events")
        let readers = (0..<256).map { _ in CountingReader() }
        let streams = readers.map { reader in
            let stream = BlobInputStream(dataSource: ThreadRecordingSource(base: FileDataSource(path: path), record: threads), mode: .asynchronous)
            stream.delegate = reader
            stream.delegateQueue = events
            return stream
        }
        streams.forEach { $0.open() }
        for reader in readers { #expect(reader.done.wait(timeout: .now() + 120) == .success) }
        streams.forEach { $0.close() }

        #expect(readers.allSatisfy { $0.total == size && $0.failure == nil })
        // Before the fix, every stream's serial work queue got an overcommitted thread of its
        // own: the sources were read on 150 to 245 threads. Counting the threads that read them,
        // rather than the process's, keeps tests running in parallel out of the count.
        #expect(threads.count <= 32, "the sources were read on \(threads.count) threads (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
    }

    @Test func concurrentAsyncChecksumsOfAsynchronousStreamsStayWithinABoundedNumberOfThreads() async throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: 8 << 20, seed: 22)
        var reference = ChecksumAlgorithm.crc32.makeChecksum()
        reference.update(TempFiles.pseudoRandomBytes(count: 8 << 20, seed: 22))

        let threads = ThreadRecord()
        let digests = try await withThrowingTaskGroup(of: ChecksumDigest.self) { group in
            for _ in 0..<256 {
                group.addTask {
                    let source = ThreadRecordingSource(base: FileDataSource(path: path), record: threads)
                    return try await ChecksumCalculator(algorithm: .crc32).digest(of: BlobInputStream(dataSource: source, mode: .asynchronous))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(digests.count == 256 && digests.allSatisfy { $0 == reference.finalize() })
        // Each calculation's events went to a private serial queue of its own, with a thread of
        // its own when many ran at once (the delegate's reads refill the stream on that thread).
        #expect(threads.count <= 32, "the sources were read on \(threads.count) threads for 256 checksums")
    }
}

/// The threads that have read a source.
final class ThreadRecord: @unchecked Sendable {
    private let ids = LockedValue<Set<pthread_t>>([])

    func note() {
        let id = pthread_self()
        ids.withLock { _ = $0.insert(id) }
    }

    var count: Int { ids.withLock { $0.count } }
}

/// A file source that notes the thread of every read.
final class ThreadRecordingSource: BlobDataSource {
    let base: FileDataSource
    let record: ThreadRecord

    init(base: FileDataSource, record: ThreadRecord) {
        self.base = base
        self.record = record
    }

    var resourceName: String { base.resourceName }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        base.open(completion: completion)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
        record.note()
        return base.read(into: buffer, at: offset, whenReadable: whenReadable)
    }

    func close() { base.close() }
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
