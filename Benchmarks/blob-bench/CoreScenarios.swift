import BlobStream
import Foundation

/// Reading a file in page cache with 64 KiB reads: raw `pread` (the baseline), Foundation's file
/// stream, and BlobInputStream in both modes.
enum CoreScenarios {
    static let readSize = 64 * 1024

    static func run(file: String, size: Int, runs: Int) throws -> [ScenarioResult] {
        let runLoop = AsyncScenarios.RunLoopReading()
        let many = AsyncScenarios.ManyStreams()
        let speeds = try Measurement.interleavedBestMBps(bytes: size, runs: runs, [
            { try preadLoop(file) },
            { drain(InputStream(fileAtPath: file)!) },
            { drain(BlobInputStream(fileAtPath: file)) },
            { try drainWithEvents(BlobInputStream(fileAtPath: file, mode: .asynchronous)) },
            { try runLoop.read(file) },
            { try AsyncScenarios.readChunks(file) },
            { try many.read(file, size: size) },
        ])
        // The latency probe reads the clock twice per event: in a run of its own, untimed.
        _ = try runLoop.read(file, probing: true)
        let baseline = speeds[0]
        func result(_ name: String, _ mbps: Double, extras: [String: Double] = [:]) -> ScenarioResult {
            var result = ScenarioResult(scenario: name, mbps: mbps, baseline: "pread-64k", ratio: mbps / baseline)
            result.extras = extras
            return result
        }
        return [
            result("pread-64k", baseline),
            result("foundation-inputstream-64k", speeds[1]),
            result("blobinputstream-sync-64k", speeds[2]),
            result("blobinputstream-async-queue-64k", speeds[3]),
            result("blobinputstream-async-runloop-64k", speeds[4], extras: ["median_event_latency_us": runLoop.medianLatencyMicroseconds]),
            result("blobchunks-1mib", speeds[5]),
            result("scale-256-async-streams", speeds[6], extras: [
                "peak_threads": Double(many.peakThreads),
                "peak_rss_growth_mib": Double(many.peakResidentGrowth) / Double(1 << 20),
            ]),
        ]
    }

    private static func preadLoop(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchmarkError("cannot open \(path)") }
        defer { close(fd) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: readSize, alignment: 64)
        defer { buffer.deallocate() }
        var total = 0
        while true {
            let n = pread(fd, buffer, readSize, off_t(total))
            if n <= 0 { return total }
            total += n
        }
    }

    /// Reads a synchronous stream the way URLSession does: while hasBytesAvailable, read 64 KiB.
    static func drain(_ stream: InputStream) -> Int {
        stream.open()
        defer { stream.close() }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: readSize)
        defer { buffer.deallocate() }
        var total = 0
        while stream.hasBytesAvailable {
            let n = stream.read(buffer, maxLength: readSize)
            if n <= 0 { break }
            total += n
        }
        return total
    }

    /// Reads an asynchronous stream from its delegate, on a dispatch queue.
    private static func drainWithEvents(_ stream: BlobInputStream) throws -> Int {
        let reader = EventReader()
        stream.delegate = reader
        stream.delegateQueue = DispatchQueue(label: "blob-bench.events")
        stream.open()
        reader.done.wait()
        stream.close()
        if let error = reader.error { throw error }
        return reader.total
    }
}
