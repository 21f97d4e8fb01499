import BlobStream
import Foundation

/// The HTTP-source scenario: the file at `file` (of `fileSize` bytes) is linked under the test
/// nginx's root (started, and installed if missing, by `Scripts/test-servers.sh up`) and
/// streamed from `http://127.0.0.1:18080/` through a synchronous ``BlobInputStream`` over an
/// ``HTTPDataSource`` with 64 KiB reads, alternating with `curl -s -o /dev/null` of the same URL,
/// best of `runs` each. Target (in `Targets`): at least 1.0× curl.
///
/// - Returns: `http-source-sync-64k` (ratio to curl; extras `peak_rss_growth_mib`, the peak
///   resident size above the idle size while streaming, target under 64 MiB, and
///   `urlsession_transport_mbps`, one run through the URLSession transport for comparison) and
///   its baseline `curl (http baseline)`. If the servers cannot be started or any run fails, it
///   prints why on standard error and its scenario scores 0 MB/s.
func httpScenarios(file: String, fileSize: Int, runs: Int = 3) -> [ScenarioResult] {
    let baseline = "curl (http baseline)"
    let scenario = "http-source-sync-64k"
    let url: URL
    do {
        url = try HTTPBenchmarkServer.publish(file)
    } catch {
        FileHandle.standardError.write(Data("blob-bench: http scenario: \(error)\n".utf8))
        return [ScenarioResult(scenario: scenario, mbps: 0, baseline: baseline, ratio: 0)]
    }
    defer { HTTPBenchmarkServer.unpublish(url) }

    var curlRuns: [Double] = []
    var sourceRuns: [Double] = []
    var peakGrowth = 0
    for round in -1..<max(1, runs) {
        let curlSeconds = try? Measurement.seconds(ofCommand: ["curl", "-s", "-f", "-o", "/dev/null", url.absoluteString])
        let (sourceSeconds, growth) = streamWithPeakGrowth(HTTPDataSource(url: url), expected: fileSize)
        guard round >= 0 else { continue }  // one untimed round warms nginx and the page cache
        if curlSeconds == nil { FileHandle.standardError.write(Data("blob-bench: http scenario: curl \(url) failed\n".utf8)) }
        curlRuns.append(curlSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        sourceRuns.append(sourceSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        peakGrowth = max(peakGrowth, growth)
    }
    let urlSessionSource = HTTPDataSource(url: url, configuration: .init(transport: .urlSession))
    let urlSessionMBps = streamWithPeakGrowth(urlSessionSource, expected: fileSize).seconds.map { Double(fileSize) / 1e6 / $0 } ?? 0

    // Any failed run (scored 0) fails the scenario rather than hide behind a better run.
    let curlMBps = curlRuns.contains(0) ? 0 : curlRuns.max() ?? 0
    let sourceMBps = sourceRuns.contains(0) ? 0 : sourceRuns.max() ?? 0
    return [
        ScenarioResult(scenario: baseline, mbps: curlMBps, baseline: baseline, ratio: 1),
        ScenarioResult(
            scenario: scenario,
            mbps: sourceMBps,
            baseline: baseline,
            ratio: curlMBps > 0 ? sourceMBps / curlMBps : 0,
            extras: [
                "peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20),
                "urlsession_transport_mbps": urlSessionMBps,
            ]
        ),
    ]
}

/// Streams `source` to the end with 64 KiB reads; returns the seconds taken (or `nil`, after
/// saying why on standard error) and how far the peak resident size rose above the size before
/// the stream opened.
private func streamWithPeakGrowth(_ source: HTTPDataSource, expected: Int) -> (seconds: Double?, growth: Int) {
    let stream = BlobInputStream(dataSource: source)
    LoopbackServers.resetPeakResidentSize()
    let idle = Measurement.residentBytes()
    let start = DispatchTime.now().uptimeNanoseconds
    guard let total = Measurement.readToEnd(stream, label: "http") else { return (nil, 0) }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let growth = max(0, Measurement.peakResidentBytes() - idle)
    guard total == expected else {
        FileHandle.standardError.write(Data("blob-bench: http scenario: read \(total) bytes, expected \(expected)\n".utf8))
        return (nil, growth)
    }
    return (max(seconds, 1e-9), growth)
}

/// The test nginx, as the benchmark uses it.
private enum HTTPBenchmarkServer {
    static let base = URL(string: "http://127.0.0.1:18080/")!
    static let wwwRoot = "/tmp/blobstream-servers/www"

    /// Starts the test servers and links `file` under nginx's root; returns its URL.
    static func publish(_ file: String) throws -> URL {
        try LoopbackServers.start()
        let name = "blob-bench-\(getpid())-\(URL(fileURLWithPath: file).lastPathComponent)"
        let link = "\(wwwRoot)/\(name)"
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: URL(fileURLWithPath: file).path)
        return base.appendingPathComponent(name)
    }

    static func unpublish(_ url: URL) {
        try? FileManager.default.removeItem(atPath: "\(wwwRoot)/\(url.lastPathComponent)")
    }

}
