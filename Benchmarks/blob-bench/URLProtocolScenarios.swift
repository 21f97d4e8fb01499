import BlobStream
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `urlprotocol` group: the benchmark file, imported into a ``DirectoryAssetStore``, loaded
/// as `asset://` through URLSession and ``BlobURLProtocol`` — a delegate data task (streamed
/// block by block) and `data(from:)` (one piece) — against reading the same asset with a
/// synchronous ``BlobInputStream`` and 64 KiB reads, in interleaved rounds, best of `runs`.
///
/// Targets: the delegate task reaches at least 0.5× the stream, and its peak RSS grows by at
/// most 64 MiB whatever the blob's size (its memory is a few blocks). `data(from:)` returns the
/// whole blob as one `Data`, so its fair baseline is the stream read into a new `Data` of the
/// blob's size (whose page faults cost more than the reading): at least 0.5× that, and no
/// memory target.
func urlProtocolScenarios(file: String, fileSize: Int, runs: Int) -> [ScenarioResult] {
    let folder = NSTemporaryDirectory() + "blob-bench-urlprotocol-" + UUID().uuidString
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let baseline = "asset-blobinputstream-sync-64k (urlprotocol baseline)"
    let failed = [
        ScenarioResult(scenario: "urlprotocol-delegate-task", mbps: 0, baseline: baseline, ratio: 0),
        ScenarioResult(scenario: "urlprotocol-async-data", mbps: 0, baseline: "asset-blobinputstream-into-data (urlprotocol data baseline)", ratio: 0),
    ]
    let identifier: String
    do {
        let store = try DirectoryAssetStore(directory: folder)
        identifier = try store.import(fileAt: file)
        BlobURLRegistry.shared.register(assetStore: store, scheme: "bench-asset")
    } catch {
        FileHandle.standardError.write(Data("blob-bench: urlprotocol scenario: cannot import \(file): \(error)\n".utf8))
        return failed
    }
    defer { BlobURLRegistry.shared.unregister(scheme: "bench-asset") }
    guard let url = AssetURL.url(identifier: identifier, scheme: "bench-asset") else { return failed }
    let configuration = URLSessionConfiguration.ephemeral
    BlobURLProtocol.install(into: configuration)
    let counter = ByteCountingDelegate()
    let delegateSession = URLSession(configuration: configuration, delegate: counter, delegateQueue: nil)
    let plainSession = URLSession(configuration: configuration)
    defer {
        delegateSession.finishTasksAndInvalidate()
        plainSession.finishTasksAndInvalidate()
    }

    // The delegate task's memory, measured alone before any run has held the whole blob.
    _ = counter.load(url, in: delegateSession)
    LoopbackServers.resetPeakResidentSize()
    let idle = Measurement.residentBytes()
    let measured = counter.load(url, in: delegateSession)
    let peakGrowth = max(0, Measurement.peakResidentBytes() - idle)
    guard measured == fileSize else {
        FileHandle.standardError.write(Data("blob-bench: urlprotocol scenario: the delegate task got \(measured) bytes of \(fileSize)\n".utf8))
        return failed
    }

    let speeds: [Double]
    do {
        speeds = try Measurement.interleavedBestMBps(bytes: fileSize, runs: max(1, runs), [
            {
                let source = AssetDataSource(store: try DirectoryAssetStore(directory: folder), identifier: identifier)
                return Measurement.readToEnd(BlobInputStream(dataSource: source), label: "urlprotocol baseline") ?? 0
            },
            { counter.load(url, in: delegateSession) },
            { dataFrom(url, in: plainSession) },
            {
                let source = AssetDataSource(store: try DirectoryAssetStore(directory: folder), identifier: identifier)
                return readIntoData(BlobInputStream(dataSource: source), size: fileSize)
            },
        ])
    } catch {
        FileHandle.standardError.write(Data("blob-bench: urlprotocol scenario: \(error)\n".utf8))
        return failed
    }
    let (streamMBps, delegateMBps, dataMBps, intoDataMBps) = (speeds[0], speeds[1], speeds[2], speeds[3])
    let dataBaseline = "asset-blobinputstream-into-data (urlprotocol data baseline)"
    return [
        ScenarioResult(scenario: baseline, mbps: streamMBps, baseline: baseline, ratio: 1),
        ScenarioResult(
            scenario: "urlprotocol-delegate-task", mbps: delegateMBps, baseline: baseline,
            ratio: streamMBps > 0 ? delegateMBps / streamMBps : 0,
            extras: [
                "peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20),
                "chunks_per_mib": Double(counter.lastChunkCount) / max(Double(fileSize) / Double(1 << 20), 1e-9),
            ]
        ),
        ScenarioResult(scenario: dataBaseline, mbps: intoDataMBps, baseline: dataBaseline, ratio: 1),
        ScenarioResult(
            scenario: "urlprotocol-async-data", mbps: dataMBps, baseline: dataBaseline,
            ratio: intoDataMBps > 0 ? dataMBps / intoDataMBps : 0,
            extras: ["ratio_to_64k_reads": streamMBps > 0 ? dataMBps / streamMBps : 0]
        ),
    ]
}

/// Reads `stream` to its end into a new `Data` of `size` bytes, as a caller who wants the blob
/// in memory would; returns the bytes read (0 on failure, said why).
private func readIntoData(_ stream: BlobInputStream, size: Int) -> Int {
    var data = Data(count: size)
    stream.open()
    defer { stream.close() }
    var total = 0
    while total < size {
        let count = data.withUnsafeMutableBytes { bytes in
            stream.read(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + total, maxLength: size - total)
        }
        guard count > 0 else {
            FileHandle.standardError.write(Data("blob-bench: urlprotocol data baseline: \(stream.blobError.map { "\($0)" } ?? "ended early")\n".utf8))
            return 0
        }
        total += count
    }
    return total
}

/// Loads `url` with `data(from:)` and returns the bytes received (0 on failure, said why).
private func dataFrom(_ url: URL, in session: URLSession) -> Int {
    switch waitForAsync({ () async throws -> Int in try await session.data(from: url).0.count }) {
    case .success(let count):
        return count
    case .failure(let error):
        FileHandle.standardError.write(Data("blob-bench: urlprotocol data(from:): \(error)\n".utf8))
        return 0
    }
}

/// A session delegate that counts a data task's bytes and chunks and keeps none of them.
private final class ByteCountingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var bytes = 0
    private var chunks = 0
    private var failure: (any Error)?
    private let done = DispatchSemaphore(value: 0)

    /// The chunks of the last completed load.
    var lastChunkCount: Int { lock.withLock { chunks } }

    /// Runs one data task for `url` and returns its byte count (0 on failure, said why).
    func load(_ url: URL, in session: URLSession) -> Int {
        lock.withLock {
            bytes = 0
            chunks = 0
            failure = nil
        }
        session.dataTask(with: url).resume()
        done.wait()
        return lock.withLock {
            if let failure {
                FileHandle.standardError.write(Data("blob-bench: urlprotocol delegate task: \(failure)\n".utf8))
                return 0
            }
            return bytes
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock {
            bytes += data.count
            chunks += 1
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock { failure = error }
        done.signal()
    }
}
