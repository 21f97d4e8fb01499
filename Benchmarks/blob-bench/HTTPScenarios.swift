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
    httpSourceScenario(
        file: file, fileSize: fileSize, runs: runs, server: URL(string: "http://127.0.0.1:18080/")!, certificateAuthorities: nil,
        scenario: "http-source-sync-64k", baseline: "curl (http baseline)")
}

/// One HTTP-source scenario against nginx at `server` (`http://127.0.0.1:18080/` or its TLS twin
/// `https://127.0.0.1:18443/`): the source and curl stream the same file from the same server in
/// interleaved rounds. With `certificateAuthorities` (a PEM file), the source trusts only those
/// authorities (`Transport.automatic.trusting`) and curl gets `--cacert`; without it, the source
/// also runs once through the URLSession transport (`urlsession_transport_mbps`).
func httpSourceScenario(
    file: String, fileSize: Int, runs: Int, server: URL, certificateAuthorities: String?, scenario: String, baseline: String
) -> [ScenarioResult] {
    let url: URL
    do {
        url = try HTTPBenchmarkServer.publish(file, on: server)
    } catch {
        FileHandle.standardError.write(Data("blob-bench: \(scenario) scenario: \(error)\n".utf8))
        return [ScenarioResult(scenario: scenario, mbps: 0, baseline: baseline, ratio: 0)]
    }
    defer { HTTPBenchmarkServer.unpublish(url) }
    let transport = certificateAuthorities.map { Transport.automatic.trusting(.certificateAuthorities(file: $0)) } ?? .automatic
    let curl = ["curl", "-s", "-f", "-o", "/dev/null"] + (certificateAuthorities.map { ["--cacert", $0] } ?? []) + [url.absoluteString]

    var curlRuns: [Double] = []
    var sourceRuns: [Double] = []
    var peakGrowth = 0
    for round in -1..<max(1, runs) {
        let curlSeconds = try? Measurement.seconds(ofCommand: curl)
        let source = HTTPDataSource(url: url, configuration: .init(transport: transport))
        let (sourceSeconds, growth) = streamWithPeakGrowth(source, expected: fileSize, label: scenario)
        guard round >= 0 else { continue }  // one untimed round warms nginx and the page cache
        if curlSeconds == nil { FileHandle.standardError.write(Data("blob-bench: \(scenario) scenario: curl \(url) failed\n".utf8)) }
        curlRuns.append(curlSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        sourceRuns.append(sourceSeconds.map { Double(fileSize) / 1e6 / $0 } ?? 0)
        peakGrowth = max(peakGrowth, growth)
    }
    var extras = ["peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20)]
    if certificateAuthorities == nil {
        let urlSessionSource = HTTPDataSource(url: url, configuration: .init(transport: .urlSession))
        extras["urlsession_transport_mbps"] =
            streamWithPeakGrowth(urlSessionSource, expected: fileSize, label: scenario).seconds.map { Double(fileSize) / 1e6 / $0 } ?? 0
    }

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
            extras: extras
        ),
    ]
}

/// Streams `source` to the end with 64 KiB reads; returns the seconds taken (or `nil`, after
/// saying why on standard error) and how far the peak resident size rose above the size before
/// the stream opened.
private func streamWithPeakGrowth(_ source: HTTPDataSource, expected: Int, label: String) -> (seconds: Double?, growth: Int) {
    let stream = BlobInputStream(dataSource: source)
    LoopbackServers.resetPeakResidentSize()
    let idle = Measurement.residentBytes()
    let start = DispatchTime.now().uptimeNanoseconds
    guard let total = Measurement.readToEnd(stream, label: label) else { return (nil, 0) }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let growth = max(0, Measurement.peakResidentBytes() - idle)
    guard total == expected else {
        FileHandle.standardError.write(Data("blob-bench: \(label) scenario: read \(total) bytes, expected \(expected)\n".utf8))
        return (nil, growth)
    }
    return (max(seconds, 1e-9), growth)
}

/// The test nginx, as the benchmark uses it.
private enum HTTPBenchmarkServer {
    static let wwwRoot = "/tmp/blobstream-servers/www"

    /// Starts the test servers and links `file` under nginx's root; returns its URL on `server`
    /// (nginx's plain or TLS port: both serve the same root).
    static func publish(_ file: String, on server: URL) throws -> URL {
        try LoopbackServers.start()
        let name = "blob-bench-\(getpid())-\(URL(fileURLWithPath: file).lastPathComponent)"
        let link = "\(wwwRoot)/\(name)"
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: URL(fileURLWithPath: file).path)
        return server.appendingPathComponent(name)
    }

    static func unpublish(_ url: URL) {
        try? FileManager.default.removeItem(atPath: "\(wwwRoot)/\(url.lastPathComponent)")
    }

}
