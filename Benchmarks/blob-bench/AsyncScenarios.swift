import BlobStream
import Foundation
import Synchronization

/// The asynchronous paths, measured in the core group's rounds against the same `pread` loop:
/// delegate events on a run loop, `for try await` over ``BlobChunks``, and 256 asynchronous
/// streams at once with their events on one serial queue.
enum AsyncScenarios {
    /// Delegate events on a run loop of a thread of its own; records each `hasBytesAvailable`'s
    /// latency from its post to its delivery.
    final class RunLoopReading: @unchecked Sendable {
        private let thread: Thread
        private let runLoopBox = Shared<RunLoop?>(nil)
        private let ready = DispatchSemaphore(value: 0)
        private let latencies = Shared<[UInt64]>([])

        init() {
            let box = runLoopBox, ready = self.ready
            thread = Thread {
                let runLoop = RunLoop.current
                // Keeps the run loop waiting instead of returning when no stream is scheduled.
                runLoop.add(Timer(timeInterval: 1e9, repeats: true) { _ in }, forMode: .default)
                box.withLock { $0 = runLoop }
                ready.signal()
                while true { _ = runLoop.run(mode: .default, before: .distantFuture) }
            }
            thread.name = "blob-bench.runloop"
            thread.start()
            ready.wait()
        }

        /// The median event latency in microseconds over every run so far.
        var medianLatencyMicroseconds: Double {
            let sorted = latencies.withLock { $0 }.sorted()
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[sorted.count / 2]) / 1000
        }

        /// Reads the file with events on the run loop. With `probing`, records every event's
        /// latency, at a cost: measure the latency in a run of its own, not in a timed one.
        func read(_ path: String, probing: Bool = false) throws -> Int {
            let stream = BlobInputStream(fileAtPath: path, mode: .asynchronous)
            let latencies = self.latencies
            if probing {
                stream.eventLatencyProbe = { nanoseconds in latencies.withLock { $0.append(nanoseconds) } }
            }
            let reader = EventReader()
            stream.delegate = reader
            stream.schedule(in: runLoopBox.withLock { $0! }, forMode: .default)
            stream.open()
            reader.done.wait()
            stream.close()
            if let error = reader.error { throw error }
            return reader.total
        }
    }

    /// `for try await` over 1 MiB chunks, from a task, counting the bytes.
    static func readChunks(_ path: String) throws -> Int {
        try waitForAsync { () async throws -> Int in
            var total = 0
            for try await chunk in try BlobChunks(url: URL(fileURLWithPath: path), chunkSize: 1 << 20) {
                total += chunk.count
            }
            return total
        }.get()
    }

    /// 256 asynchronous streams, each over its own 1/256 of the file, read at once with their
    /// events on one serial queue; samples threads and resident memory meanwhile.
    final class ManyStreams: @unchecked Sendable {
        static let count = 256
        private(set) var peakThreads = 0
        private(set) var peakResidentGrowth = 0

        func read(_ path: String, size: Int) throws -> Int {
            let slice = size / Self.count
            let events = DispatchQueue(label: "blob-bench.256-events")
            let sampler = Sampler()
            // Their events are serial on one queue, so one buffer serves every reader: what is
            // measured is the streams' memory, not the benchmark's.
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: CoreScenarios.readSize)
            defer { buffer.deallocate() }
            let readers = (0..<Self.count).map { _ in EventReader(buffer: buffer) }
            let streams = readers.enumerated().map { index, reader in
                let length = index == Self.count - 1 ? size - slice * index : slice
                let source = SliceDataSource(base: FileDataSource(path: path), start: Int64(slice * index), length: Int64(length))
                let stream = BlobInputStream(dataSource: source, mode: .asynchronous)
                stream.delegate = reader
                stream.delegateQueue = events
                return stream
            }
            streams.forEach { $0.open() }
            readers.forEach { $0.done.wait() }
            streams.forEach { $0.close() }
            let (threads, growth) = sampler.stop()
            peakThreads = max(peakThreads, threads)
            peakResidentGrowth = max(peakResidentGrowth, growth)
            if let error = readers.lazy.compactMap(\.error).first { throw error }
            return readers.reduce(0) { $0 + $1.total }
        }
    }
}

/// A value shared between threads, behind a lock (a `RunLoop` is not `Sendable`, which a
/// `Mutex` in a class would need it to be here).
private final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try lock.withLock { try body(&value) }
    }
}

/// Reads 64 KiB on every `hasBytesAvailable`, on whatever thread or queue events arrive.
final class EventReader: NSObject, StreamDelegate, @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private let buffer: UnsafeMutablePointer<UInt8>
    private let ownsBuffer: Bool
    private(set) var total = 0
    private(set) var error: Error?

    /// Reads into `buffer` (of ``CoreScenarios/readSize`` bytes), or into one of its own.
    init(buffer: UnsafeMutablePointer<UInt8>? = nil) {
        self.buffer = buffer ?? .allocate(capacity: CoreScenarios.readSize)
        ownsBuffer = buffer == nil
    }

    deinit { if ownsBuffer { buffer.deallocate() } }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let stream = aStream as! BlobInputStream
        switch eventCode {
        case .hasBytesAvailable:
            let n = stream.read(buffer, maxLength: CoreScenarios.readSize)
            if n > 0 { total += n }
        case .endEncountered:
            done.signal()
        case .errorOccurred:
            error = stream.blobError
            done.signal()
        default:
            break
        }
    }
}

/// `length` bytes of a file from `start`, as a blob of their own: one stream's share of the
/// file in the 256-stream scenario.
private final class SliceDataSource: BlobDataSource {
    let base: FileDataSource
    let start: Int64
    let length: Int64

    init(base: FileDataSource, start: Int64, length: Int64) {
        self.base = base
        self.start = start
        self.length = length
    }

    var resourceName: String { "\(base.path)[\(start)+\(length)]" }
    var readsImmediately: Bool { base.readsImmediately }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let length = self.length
        base.open { result in completion(result.map { BlobSourceDescription(length: length, version: $0.version) }) }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
        guard offset < length else { return .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        return base.read(into: wanted, at: start + offset, whenReadable: whenReadable)
    }

    func close() { base.close() }
}

/// The peak thread count and resident-memory growth of this process while it runs.
private final class Sampler: @unchecked Sendable {
    private let residentBefore = Measurement.residentBytes()
    private let peakThreads = Atomic(0)
    private let peakResident = Atomic(0)
    private let running = Atomic(true)
    private let finished = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while running.load(ordering: .relaxed) {
                let (threads, resident) = Self.sample()
                if threads > peakThreads.load(ordering: .relaxed) { peakThreads.store(threads, ordering: .relaxed) }
                if resident > peakResident.load(ordering: .relaxed) { peakResident.store(resident, ordering: .relaxed) }
                usleep(2000)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops; returns the peak thread count (the sampler's own thread not counted) and the
    /// peak growth of resident memory in bytes.
    func stop() -> (threads: Int, residentGrowth: Int) {
        running.store(false, ordering: .relaxed)
        finished.wait()
        return (peakThreads.load(ordering: .relaxed) - 1, max(0, peakResident.load(ordering: .relaxed) - residentBefore))
    }

    /// Threads from `/proc/self/stat` (field 20) and resident pages from `/proc/self/statm`
    /// (field 2): short files, cheap to parse, so sampling takes little from the streams.
    private static func sample() -> (threads: Int, resident: Int) {
        func fields(_ path: String) -> [Substring] {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
            return text.split(separator: " ")
        }
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        let stat = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) ?? ""
        let afterName = stat.lastIndex(of: ")").map { stat[stat.index(after: $0)...].split(separator: " ") } ?? []
        let threads = afterName.count > 17 ? Int(afterName[17]) ?? 0 : 0
        let statm = fields("/proc/self/statm")
        let pages = statm.count > 1 ? Int(statm[1]) ?? 0 : 0
        return (threads, pages * Int(sysconf(Int32(_SC_PAGESIZE))))
    }
}
