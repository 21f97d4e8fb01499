import BlobStream
import Foundation
import SystemCalls

/// Timing helpers: best of a few runs, so a stray hiccup on a shared machine does not decide.
enum Measurement {
    /// Runs `body` `runs` times and returns the best throughput in MB/s for `bytes` bytes.
    /// `body` returns the number of bytes it processed; any other count than `bytes` (a failed
    /// or short run) throws, so the scenario is reported as failed rather than timed or trapping.
    static func bestMBps(bytes: Int, runs: Int, _ body: () throws -> Int) throws -> Double {
        var best = 0.0
        for _ in 0..<runs {
            let start = DispatchTime.now().uptimeNanoseconds
            let processed = try body()
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            guard processed == bytes else { throw BenchmarkError("a scenario processed \(processed) bytes instead of \(bytes)") }
            best = max(best, Double(bytes) / elapsed / 1e6)
        }
        return best
    }

    /// Runs every scenario once per round, `runs` rounds, and returns each one's best MB/s for
    /// `bytes` bytes. Interleaving gives every scenario the same share of a machine whose load
    /// changes during the run, so ratios stay fair.
    static func interleavedBestMBps(bytes: Int, runs: Int, _ scenarios: [() throws -> Int]) throws -> [Double] {
        var best = [Double](repeating: 0, count: scenarios.count)
        for _ in 0..<runs {
            for (index, scenario) in scenarios.enumerated() {
                best[index] = max(best[index], try bestMBps(bytes: bytes, runs: 1, scenario))
            }
        }
        return best
    }

    /// Opens `stream`, reads it to the end with 64 KiB reads and closes it; returns the bytes
    /// read, or `nil` after saying on standard error why the `label` scenario's stream failed.
    static func readToEnd(_ stream: BlobInputStream, label: String) -> Int? {
        let readSize = 64 * 1024
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: readSize)
        defer { buffer.deallocate() }
        stream.open()
        defer { stream.close() }
        var total = 0
        while true {
            let count = stream.read(buffer, maxLength: readSize)
            if count > 0 {
                total += count
            } else if count == 0 {
                return total
            } else {
                let reason = stream.blobError.map { "\($0)" } ?? "unknown error"
                FileHandle.standardError.write(Data("blob-bench: \(label) scenario: \(reason)\n".utf8))
                return nil
            }
        }
    }

    /// Wall-clock seconds of an external command (the command's output is discarded).
    static func seconds(ofCommand arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let ended = ChildExit.waitForever(process)
        guard ended == .success else {
            throw BenchmarkError("\(arguments.joined(separator: " ")) exited with \(ended.code)")
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// The process's peak resident set size so far, in bytes (VmHWM).
    static func peakResidentBytes() -> Int { statusField("VmHWM") }

    /// The process's resident set size now, in bytes (VmRSS).
    static func residentBytes() -> Int { statusField("VmRSS") }

    private static func statusField(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}

extension Measurement {
    /// User plus system CPU seconds of `who` (this process, or its waited-for children).
    static func cpuSeconds(_ who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// A failure that stops the benchmark, with what to do about it.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
