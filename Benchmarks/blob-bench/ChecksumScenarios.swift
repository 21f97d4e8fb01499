import BlobStream
import Foundation

/// Checksum throughput against the standard tools, all measured in this run on the same file
/// (already in the page cache): `openssl dgst` for SHA-256 and SHA-1, `md5sum` for MD5,
/// Python's `zlib.crc32` over 1 MiB reads for CRC-32; CRC-32C in absolute terms; and SHA-256
/// through BlobInputStream against SHA-256 over an in-memory buffer.
///
/// Ours is the library path a user takes: `ChecksumCalculator` reading a `BlobInputStream` of
/// the file. External tools are timed as whole processes (wall clock), best of three.
/// Targets: sha256/sha1/md5 ≥ 0.8× their tool, crc32 ≥ 1.0× zlib, crc32c ≥ 5000 MB/s,
/// sha256 through the stream ≥ 0.9× in memory.
func checksumScenarios(file: String, fileSize: Int) -> [ScenarioResult] {
    let runs = 3
    var results: [ScenarioResult] = []

    func ours(_ algorithm: ChecksumAlgorithm) -> Double {
        Measurement.bestMBps(bytes: fileSize, runs: runs) {
            do {
                _ = try ChecksumCalculator(algorithm: algorithm).digest(of: BlobInputStream(fileAtPath: file))
            } catch {
                fatalError("checksum of \(file) failed: \(error)")
            }
            return fileSize
        }
    }

    func tool(_ name: String, _ arguments: [String]) -> Double? {
        var best: Double?
        for _ in 0..<runs {
            guard let seconds = try? Measurement.seconds(ofCommand: arguments) else {
                FileHandle.standardError.write(Data("blob-bench: \(name) failed or is not installed: \(arguments.joined(separator: " "))\n".utf8))
                return nil
            }
            best = max(best ?? 0, Double(fileSize) / seconds / 1e6)
        }
        return best
    }

    /// Ours against a tool: both rows, the tool's as the reference (ratio 1).
    func compare(_ algorithm: ChecksumAlgorithm, baseline: String, command: [String], target: Double) {
        let reference = tool(baseline, command)
        let mbps = ours(algorithm)
        let accelerated: Double = algorithm.isHardwareAccelerated ? 1 : 0
        if let reference {
            results.append(ScenarioResult(scenario: baseline, mbps: reference, baseline: baseline, ratio: 1))
        }
        results.append(ScenarioResult(
            scenario: "\(algorithm.name)-blobinputstream-file", mbps: mbps,
            baseline: reference == nil ? "\(baseline) (unavailable)" : baseline,
            ratio: reference.map { mbps / $0 } ?? 0,
            extras: ["target_ratio": target, "accelerated": accelerated]
        ))
    }

    compare(.sha256, baseline: "openssl-sha256", command: ["openssl", "dgst", "-sha256", file], target: 0.8)
    compare(.sha1, baseline: "openssl-sha1", command: ["openssl", "dgst", "-sha1", file], target: 0.8)
    compare(.md5, baseline: "md5sum", command: ["md5sum", file], target: 0.8)
    let python = "import sys, zlib\ncrc = 0\nwith open(sys.argv[1], 'rb') as f:\n"
        + "    for chunk in iter(lambda: f.read(1 << 20), b''):\n        crc = zlib.crc32(chunk, crc)\n"
    compare(.crc32, baseline: "python-zlib-crc32-1mib", command: ["python3", "-c", python, file], target: 1.0)

    // The bare algorithms over a buffer in memory, larger than the caches so memory bandwidth
    // counts as it does for a file.
    let memory = inMemoryThroughput(fileSize: fileSize, runs: runs)
    let crc32c = ours(.crc32c)
    results.append(ScenarioResult(scenario: "crc32-memory (ours)", mbps: memory[.crc32]!, baseline: "crc32-memory (ours)", ratio: 1))
    results.append(ScenarioResult(
        scenario: "crc32c-memory", mbps: memory[.crc32c]!, baseline: "crc32-memory (ours)",
        ratio: memory[.crc32c]! / memory[.crc32]!, extras: ["target_mbps": 5000]
    ))
    results.append(ScenarioResult(
        scenario: "crc32c-blobinputstream-file", mbps: crc32c, baseline: "crc32-memory (ours)",
        ratio: crc32c / memory[.crc32]!, extras: ["target_mbps": 5000]
    ))

    let sha256Stream = ours(.sha256)
    results.append(ScenarioResult(scenario: "sha256-memory", mbps: memory[.sha256]!, baseline: "sha256-memory", ratio: 1))
    results.append(ScenarioResult(
        scenario: "sha256-\(fileSize >> 20)mib-file-through-blobinputstream", mbps: sha256Stream,
        baseline: "sha256-memory", ratio: sha256Stream / memory[.sha256]!, extras: ["target_ratio": 0.9]
    ))
    return results
}

/// MB/s of each algorithm over `fileSize` bytes of a 64 MiB buffer hashed again and again.
private func inMemoryThroughput(fileSize: Int, runs: Int) -> [ChecksumAlgorithm: Double] {
    let bufferSize = min(fileSize, 64 << 20)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 64)
    defer { buffer.deallocate() }
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for index in stride(from: 0, to: bufferSize - 7, by: 8) {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        buffer.storeBytes(of: state, toByteOffset: index, as: UInt64.self)
    }
    var throughput: [ChecksumAlgorithm: Double] = [:]
    for algorithm in [ChecksumAlgorithm.crc32, .crc32c, .sha256] {
        throughput[algorithm] = Measurement.bestMBps(bytes: fileSize, runs: runs) {
            var checksum = algorithm.makeChecksum()
            var remaining = fileSize
            while remaining > 0 {
                let count = min(remaining, bufferSize)
                checksum.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                remaining -= count
            }
            _ = checksum.finalize()
            return fileSize
        }
    }
    return throughput
}
