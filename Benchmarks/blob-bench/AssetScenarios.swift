import BlobStream
import Foundation

/// The asset-source scenario: the file at `file` (of `fileSize` bytes) is imported into a
/// ``DirectoryAssetStore`` in a temporary folder and streamed through a synchronous
/// ``BlobInputStream`` with 64 KiB reads, and so is the original file through a
/// ``FileDataSource``, alternating runs so both see the same machine state, best of `runs` each
/// (like the other groups). Target: the asset stream reaches at least 0.8× the file stream's
/// throughput.
///
/// - Returns: Two results: `asset-directory-sync-64k` (best MB/s, ratio to the file source,
///   extras `source_reads_per_mib` and `block_kib`) and its baseline `file-sync-64k (asset baseline)`
///   with ratio 1. If any run fails, it prints why on standard error and its scenario scores 0 MB/s.
func assetScenarios(file: String, fileSize: Int, runs: Int = 5) -> [ScenarioResult] {
    let folder = NSTemporaryDirectory() + "blob-bench-assets-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let store: DirectoryAssetStore
    let identifier: String
    do {
        store = try DirectoryAssetStore(directory: folder)
        identifier = try store.import(fileAt: file)
    } catch {
        FileHandle.standardError.write(Data("blob-bench: asset scenario: cannot import \(file): \(error)\n".utf8))
        // A row scoring 0, so the verdict counts the scenario as missed rather than absent.
        return [ScenarioResult(scenario: "asset-directory-sync-64k", mbps: 0, baseline: "file-sync-64k (asset baseline)", ratio: 0)]
    }

    var fileRuns: [Double] = []
    var assetRuns: [Double] = []
    var readsPerMiB = 0.0
    // One untimed pass of each warms the page cache for both copies.
    for round in -1..<max(1, runs) {
        let fileSeconds = timeSynchronousStream(BlobInputStream(fileAtPath: file), expected: fileSize)
        let source = AssetDataSource(store: store, identifier: identifier)
        let assetSeconds = timeSynchronousStream(BlobInputStream(dataSource: source), expected: fileSize)
        guard round >= 0 else { continue }
        fileRuns.append(fileSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        assetRuns.append(assetSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        readsPerMiB = Double(source.sourceReadCount) / max(Double(fileSize) / Double(1 << 20), 1e-9)
    }
    // Any failed run (scored 0) fails the scenario rather than hide behind a better run.
    let fileMBps = fileRuns.contains(0) ? 0 : fileRuns.max() ?? 0
    let assetMBps = assetRuns.contains(0) ? 0 : assetRuns.max() ?? 0
    let baseline = "file-sync-64k (asset baseline)"
    return [
        ScenarioResult(scenario: baseline, mbps: fileMBps, baseline: baseline, ratio: 1),
        ScenarioResult(
            scenario: "asset-directory-sync-64k",
            mbps: assetMBps,
            baseline: baseline,
            ratio: fileMBps > 0 ? assetMBps / fileMBps : 0,
            extras: [
                "source_reads_per_mib": readsPerMiB,
                "block_kib": Double(AssetDataSource.defaultBlockSize / 1024),
            ]
        ),
    ]
}

/// Seconds to open `stream` and read `expected` bytes with 64 KiB reads, or `nil` (after saying
/// why on standard error) when the stream fails or returns another number of bytes.
private func timeSynchronousStream(_ stream: BlobInputStream, expected: Int) -> Double? {
    let clock = ContinuousClock()
    let start = clock.now
    guard let total = Measurement.readToEnd(stream, label: "asset") else { return nil }
    let elapsed = clock.now - start
    guard total == expected else {
        FileHandle.standardError.write(Data("blob-bench: asset scenario: read \(total) bytes, expected \(expected)\n".utf8))
        return nil
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return max(seconds, 1e-9)
}
