import BlobStream
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SystemCalls

/// The upload scenarios, on the loopback servers of `Scripts/test-servers.sh up` (started, and
/// installed if missing, here), with the file at `file` (`fileSize` bytes), best of four
/// interleaved rounds:
///
/// - `tus-upload-4m`: ``TusClient`` uploading the file in 4 MiB chunks to tuspyserver
///   (127.0.0.1:18090), against `tuspy (tus baseline)`, the official Python client, same file,
///   same chunk size, same server. Extras: `cpu_s` (this process's user+system time around the
///   upload, from `getrusage`), `tuspy_cpu_s` (the tuspy child's, from its rusage, interpreter
///   start included), `cpu_ratio` = `cpu_s / tuspy_cpu_s` (target at most 0.4),
///   `tuspy_upload_cpu_s` (tuspy's own process time around the upload alone, without the
///   interpreter's start) with `cpu_ratio_upload_only` = `cpu_s / tuspy_upload_cpu_s`, and
///   `peak_rss_growth_mib` (peak resident size above the idle size during the upload, target
///   under 64 MiB), `journal_mbps` (the same upload with a `FileUploadJournal`) and
///   `journal_ratio` = `journal_mbps / mbps` (the journal must cost no measurable throughput:
///   about 1.0). Throughput target: at least 1.0× (the server is the bottleneck). Every
///   target lives in `Targets`.
/// - `put-blobinputstream`: ``StreamedUploader`` PUTting a ``BlobInputStream`` of the file (an
///   `http:` URL, so over the package's own HTTP/1.1 client, chunked) to a ``CountingSink``,
///   which decodes and counts the body instead of storing it, against
///   `urlsession-put-inputstream (put baseline)`, URLSession with `InputStream(fileAtPath:)`,
///   what an app writes without this library (target at least 1.3×). Extras: `curl_mbps` and
///   `ratio_vs_curl` for `curl -T` into the same sink (no target: it sends `Content-Length`,
///   URLSession on Linux sends chunked); `nginx_mbps`, `nginx_urlsession_mbps`,
///   `nginx_curl_mbps` and `nginx_ratio` for the same clients PUTting into nginx on tmpfs (no
///   target: there nginx's ceiling, about 2.1 GB/s here, decides the time); `peak_rss_growth_mib`.
///   A run counts only when the server received exactly the file's byte count.
///
/// tuspy is installed with pip when missing. A scenario whose setup or any run fails prints why
/// on standard error and scores 0 MB/s.
func uploadScenarios(file: String, fileSize: Int) -> [ScenarioResult] {
    do {
        try LoopbackServers.start()
    } catch {
        UploadBenchmark.complain("upload scenarios: \(error)")
        return [
            ScenarioResult(scenario: "tus-upload-4m", mbps: 0, baseline: "tuspy (tus baseline)", ratio: 0),
            ScenarioResult(scenario: "put-blobinputstream", mbps: 0, baseline: "urlsession-put-inputstream (put baseline)", ratio: 0),
        ]
    }
    return tusScenario(file: file, fileSize: fileSize, endpoint: URL(string: "http://127.0.0.1:18090/files/")!, certificateAuthorities: nil,
                       scenario: "tus-upload-4m", baseline: "tuspy (tus baseline)")
        + putScenarios(file: file, fileSize: fileSize)
}

private let chunkSize = 4 * 1024 * 1024
/// Interleaved rounds per scenario (PUT: twice as many into the sink, as many into nginx). The
/// tus throughput ratio swings from 0.8 to 1.6 between runs on a shared machine, since
/// tuspyserver is the bottleneck and shares the CPU.
private let rounds = 4

/// One tus scenario: ``TusClient`` against tuspy, both uploading `file` to the tus server at
/// `endpoint` (the plain 18090 or its TLS proxy 18490) in 4 MiB chunks, in interleaved rounds.
/// With `certificateAuthorities` (a PEM file), ``TusClient`` trusts only those authorities and
/// tuspy gets them through `REQUESTS_CA_BUNDLE` (python-requests' `--cacert`). The servers must
/// be running (``LoopbackServers/start()``).
func tusScenario(
    file: String, fileSize: Int, endpoint: URL, certificateAuthorities: String?, scenario: String, baseline: String
) -> [ScenarioResult] {
    let transport = certificateAuthorities.map { Transport.automatic.trusting(.certificateAuthorities(file: $0)) } ?? .automatic
    var ours = Best(), theirs = Best(), journaled = Best()
    var ourCPU = Double.infinity, tuspyCPU = Double.infinity, tuspyUploadCPU = Double.infinity
    let journal = BenchJournal()
    defer { journal.remove() }
    var peakGrowth = 0
    do {
        try Tuspy.install()
    } catch {
        UploadBenchmark.complain("\(scenario) scenario: \(error)")
        theirs.fail()
    }
    for _ in 0..<rounds {
        switch ourTusUpload(file: file, fileSize: fileSize, endpoint: endpoint, transport: transport) {
        case .success(let run):
            ours.add(Double(fileSize) / 1e6 / run.seconds)
            ourCPU = min(ourCPU, run.cpuSeconds)
            peakGrowth = max(peakGrowth, run.peakGrowth)
        case .failure(let error):
            UploadBenchmark.complain("\(scenario) scenario (BlobUpload): \(error)")
            ours.fail()
        }
        // The same upload recorded in an upload journal (one entry written, then removed).
        switch ourTusUpload(file: file, fileSize: fileSize, endpoint: endpoint, transport: transport, journal: journal.journal) {
        case .success(let run): journaled.add(Double(fileSize) / 1e6 / run.seconds)
        case .failure(let error):
            UploadBenchmark.complain("\(scenario) scenario (BlobUpload with a journal): \(error)")
            journaled.fail()
        }
        guard !theirs.failed else { continue }
        switch Tuspy.upload(file: file, endpoint: endpoint, certificateAuthorities: certificateAuthorities, transport: transport) {
        case .success(let run):
            theirs.add(Double(fileSize) / 1e6 / run.seconds)
            tuspyCPU = min(tuspyCPU, run.childCPUSeconds)
            tuspyUploadCPU = min(tuspyUploadCPU, run.uploadCPUSeconds)
        case .failure(let error):
            UploadBenchmark.complain("\(scenario) scenario (tuspy): \(error)")
            theirs.fail()
        }
    }
    return [
        ScenarioResult(
            scenario: baseline, mbps: theirs.mbps, baseline: baseline, ratio: 1,
            extras: ["cpu_s": tuspyCPU.isFinite ? tuspyCPU : 0, "upload_cpu_s": tuspyUploadCPU.isFinite ? tuspyUploadCPU : 0]),
        ScenarioResult(
            scenario: scenario, mbps: ours.mbps, baseline: baseline,
            ratio: theirs.mbps > 0 ? ours.mbps / theirs.mbps : 0,
            extras: [
                "cpu_s": ourCPU.isFinite ? ourCPU : 0,
                "tuspy_cpu_s": tuspyCPU.isFinite ? tuspyCPU : 0,
                "tuspy_upload_cpu_s": tuspyUploadCPU.isFinite ? tuspyUploadCPU : 0,
                "cpu_ratio": ourCPU.isFinite && tuspyCPU.isFinite && tuspyCPU > 0 ? ourCPU / tuspyCPU : 0,
                "cpu_ratio_upload_only": ourCPU.isFinite && tuspyUploadCPU.isFinite && tuspyUploadCPU > 0
                    ? ourCPU / tuspyUploadCPU : 0,
                "peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20),
                "journal_mbps": journaled.mbps,
                "journal_ratio": ours.mbps > 0 ? journaled.mbps / ours.mbps : 0,
            ]),
    ]
}

/// A `FileUploadJournal` in a directory of its own, for the `journal_mbps` runs of the tus and
/// S3 scenarios: the throughput with the journal on, against `mbps` without.
final class BenchJournal {
    let directory = NSTemporaryDirectory() + "blob-bench-journal-\(getpid())-\(UUID().uuidString)"
    var journal: FileUploadJournal { FileUploadJournal(directory: directory) }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

private struct ProcessRun {
    var seconds: Double
    var cpuSeconds: Double
    var peakGrowth: Int
}

private func ourTusUpload(
    file: String, fileSize: Int, endpoint: URL, transport: Transport, journal: FileUploadJournal? = nil
) -> Result<ProcessRun, BlobUploadError> {
    let client = TusClient(endpoint: endpoint, transport: transport)
    var chosen = TusUploadOptions()
    chosen.chunkSize = chunkSize
    chosen.journal = journal
    let options = chosen
    LoopbackServers.resetPeakResidentSize()
    let idle = residentBytes()
    let cpuBefore = Measurement.cpuSeconds(RUSAGE_SELF)
    let start = DispatchTime.now().uptimeNanoseconds
    let result = waitForAsync { () async throws(BlobUploadError) in
        try await client.upload(.file(path: file), options: options)
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let cpu = Measurement.cpuSeconds(RUSAGE_SELF) - cpuBefore
    let growth = max(0, peakResidentBytes() - idle)
    return result.flatMap { upload in
        _ = waitForAsync { () async throws(BlobUploadError) in try await client.terminate(upload.uploadURL) }
        guard upload.length == Int64(fileSize) else {
            return .failure(.protocolViolation(operation: .tus(method: "PATCH"), url: upload.uploadURL.absoluteString, reason: "uploaded \(upload.length) bytes"))
        }
        return .success(ProcessRun(seconds: seconds, cpuSeconds: cpu, peakGrowth: growth))
    }
}

private func putScenarios(file: String, fileSize: Int) -> [ScenarioResult] {
    let baseline = "urlsession-put-inputstream (put baseline)"
    let sink: CountingSink
    do {
        sink = try CountingSink()
    } catch {
        UploadBenchmark.complain("put scenario: \(error)")
        return [ScenarioResult(scenario: "put-blobinputstream", mbps: 0, baseline: baseline, ratio: 0)]
    }
    let sinkPath = "/put/blob-bench-\(getpid()).bin"
    let sinkTarget = URL(string: "http://127.0.0.1:\(sink.port)\(sinkPath)")!
    let counted = { sink.takeCount(path: sinkPath) ?? -2 }
    let memory = NginxMemoryUpload(server: URL(string: "http://127.0.0.1:18080/")!)
    let nginxTarget = memory.url
    let storedSize = memory.takeStoredSize
    defer { memory.remove() }
    var ours = Best(), urlSession = Best(), curl = Best(), oursNginx = Best(), urlSessionNginx = Best(), curlNginx = Best()
    var peakGrowth = 0
    // Rounds interleave the clients, so a burst of load hits them alike.
    for round in 0..<(2 * rounds) {
        LoopbackServers.resetPeakResidentSize()
        let idle = residentBytes()
        ours.record(timed { ourPut(file: file, fileSize: fileSize, to: sinkTarget) }, bytes: fileSize, received: counted,
                    label: "put scenario (BlobUpload)")
        peakGrowth = max(peakGrowth, max(0, peakResidentBytes() - idle))
        urlSession.record(timed { plainURLSessionPut(file: file, to: sinkTarget) }, bytes: fileSize, received: counted,
                          label: "put scenario (URLSession)")
        curl.record(timed { curlPut(file: file, to: sinkTarget) }, bytes: fileSize, received: counted, label: "put scenario (curl -T)")
        // A real server too, reported without a target: there nginx's ceiling decides the time.
        guard round % 2 == 0 else { continue }
        oursNginx.record(timed { ourPut(file: file, fileSize: fileSize, to: nginxTarget) }, bytes: fileSize, received: storedSize,
                         label: "put scenario into nginx (BlobUpload)")
        urlSessionNginx.record(timed { plainURLSessionPut(file: file, to: nginxTarget) }, bytes: fileSize, received: storedSize,
                               label: "put scenario into nginx (URLSession)")
        curlNginx.record(timed { curlPut(file: file, to: nginxTarget) }, bytes: fileSize, received: storedSize,
                         label: "put scenario into nginx (curl -T)")
    }
    return [
        ScenarioResult(scenario: baseline, mbps: urlSession.mbps, baseline: baseline, ratio: 1),
        ScenarioResult(
            scenario: "put-blobinputstream", mbps: ours.mbps, baseline: baseline,
            ratio: urlSession.mbps > 0 ? ours.mbps / urlSession.mbps : 0,
            extras: [
                "curl_mbps": curl.mbps,
                "ratio_vs_curl": curl.mbps > 0 ? ours.mbps / curl.mbps : 0,
                "nginx_mbps": oursNginx.mbps,
                "nginx_urlsession_mbps": urlSessionNginx.mbps,
                "nginx_curl_mbps": curlNginx.mbps,
                "nginx_ratio": urlSessionNginx.mbps > 0 ? oursNginx.mbps / urlSessionNginx.mbps : 0,
                "peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20),
            ]),
    ]
}

/// A PUT target in nginx's `/upload-memory/` on `server` (the plain 18080 or TLS 18443), stored
/// on tmpfs: with the file on disk, page-cache write-back made two runs differ by 25%.
private struct NginxMemoryUpload {
    var url: URL
    var stored: String

    init(server: URL) {
        let name = "blob-bench-\(getpid()).bin"
        url = server.appendingPathComponent("upload-memory/\(name)")
        stored = "/dev/shm/blobstream-servers/upload-memory/\(name)"
    }

    /// The size nginx stored for the last PUT (-1 when none), removing the file.
    func takeStoredSize() -> Int64 {
        defer { remove() }
        return Int64((try? FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int) ?? -1)
    }

    func remove() { try? FileManager.default.removeItem(atPath: stored) }
}

/// One PUT scenario into nginx on tmpfs at `server` (`https://127.0.0.1:18443/`): ``StreamedUploader``
/// PUTting a ``BlobInputStream`` of `file` against `curl -T` of the same file, interleaved, best
/// of `rounds` each, a run counting only when nginx stored exactly the file's bytes. With
/// `certificateAuthorities` (a PEM file) ours trusts only those authorities and curl gets
/// `--cacert`. Extra: `peak_rss_growth_mib`. The servers must be running.
func nginxPutScenario(
    file: String, fileSize: Int, server: URL, certificateAuthorities: String?, scenario: String, baseline: String
) -> [ScenarioResult] {
    let transport = certificateAuthorities.map { Transport.automatic.trusting(.certificateAuthorities(file: $0)) } ?? .automatic
    let memory = NginxMemoryUpload(server: server)
    defer { memory.remove() }
    var ours = Best(), curl = Best()
    var peakGrowth = 0
    for _ in 0..<rounds {
        LoopbackServers.resetPeakResidentSize()
        let idle = residentBytes()
        ours.record(timed { ourPut(file: file, fileSize: fileSize, to: memory.url, transport: transport) }, bytes: fileSize,
                    received: memory.takeStoredSize, label: "\(scenario) scenario (BlobUpload)")
        peakGrowth = max(peakGrowth, max(0, peakResidentBytes() - idle))
        curl.record(timed { curlPut(file: file, to: memory.url, certificateAuthorities: certificateAuthorities) }, bytes: fileSize,
                    received: memory.takeStoredSize, label: "\(scenario) scenario (curl -T)")
    }
    return [
        ScenarioResult(scenario: baseline, mbps: curl.mbps, baseline: baseline, ratio: 1),
        ScenarioResult(
            scenario: scenario, mbps: ours.mbps, baseline: baseline, ratio: curl.mbps > 0 ? ours.mbps / curl.mbps : 0,
            extras: ["peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20)]),
    ]
}

/// Ours: ``StreamedUploader`` PUTting a ``BlobInputStream`` of the file.
private func ourPut(file: String, fileSize: Int, to url: URL, transport: Transport = .automatic) -> Result<Void, Error> {
    waitForAsync { () async throws(BlobUploadError) in
        try await StreamedUploader(transport: transport).upload(BlobInputStream(fileAtPath: file), to: url, expectedLength: Int64(fileSize))
    }.map { _ in () }.mapError { $0 as Error }
}

/// `curl -T`: a C client, with `Content-Length`; `--cacert certificateAuthorities` when given.
private func curlPut(file: String, to url: URL, certificateAuthorities: String? = nil) -> Result<Void, Error> {
    let trust = certificateAuthorities.map { ["--cacert", $0] } ?? []
    return Result { _ = try Measurement.seconds(ofCommand: ["curl", "-s", "-f"] + trust + ["-T", file, url.absoluteString]) }
}

/// The baseline: what an app writes without this library.
private func plainURLSessionPut(file: String, to url: URL) -> Result<Void, Error> {
    guard let stream = InputStream(fileAtPath: file) else { return .failure(BenchmarkError("cannot open \(file)")) }
    var request = URLRequest(url: url)
    request.httpMethod = "PUT"
    request.httpBodyStream = stream
    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let outcome = LockedValue<Result<Void, Error>>(.failure(BenchmarkError("no answer")))
    let done = DispatchSemaphore(value: 0)
    session.dataTask(with: request) { _, response, error in
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        outcome.withLock {
            $0 = error.map { .failure($0) } ?? ((200..<300).contains(status) ? .success(()) : .failure(BenchmarkError("HTTP \(status)")))
        }
        done.signal()
    }.resume()
    done.wait()
    return outcome.withLock { $0 }
}

/// The best throughput of a scenario's runs; any failed run fails the scenario.
private struct Best {
    private(set) var failed = false
    private var best = 0.0
    var mbps: Double { failed ? 0 : best }
    mutating func add(_ mbps: Double) { best = max(best, mbps) }
    mutating func fail() { failed = true }

    /// Scores one timed PUT, and checks that the server received every byte (`received` gives
    /// its count for this run).
    mutating func record(_ run: (Result<Void, Error>, Double), bytes: Int, received: () -> Int64, label: String) {
        let count = received()
        switch run.0 {
        case .success where count == Int64(bytes): add(Double(bytes) / 1e6 / run.1)
        case .success: UploadBenchmark.complain("\(label): the server received \(count) bytes of \(bytes)"); fail()
        case .failure(let error): UploadBenchmark.complain("\(label): \(error)"); fail()
        }
    }
}

private func timed<T>(_ body: () -> T) -> (T, Double) {
    let start = DispatchTime.now().uptimeNanoseconds
    let value = body()
    return (value, max(1e-9, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
}

private func residentBytes() -> Int { Measurement.residentBytes() }
private func peakResidentBytes() -> Int { Measurement.peakResidentBytes() }

/// The official Python tus client, run as a child process.
private enum Tuspy {
    struct Run {
        var seconds: Double
        var childCPUSeconds: Double
        var uploadCPUSeconds: Double
    }

    static func install() throws {
        if (try? Measurement.seconds(ofCommand: ["python3", "-c", "import tusclient"])) != nil { return }
        _ = try Measurement.seconds(ofCommand: ["python3", "-m", "pip", "install", "--quiet", "tuspy"])
    }

    /// Uploads `file` with tuspy in 4 MiB chunks to `endpoint`, trusting the PEM file
    /// `certificateAuthorities` when given; the upload is terminated afterwards (through
    /// ``TusClient`` with `transport`).
    static func upload(file: String, endpoint: URL, certificateAuthorities: String?, transport: Transport) -> Result<Run, Error> {
        let script = """
            import sys, time
            from tusclient import client
            start, cpu = time.perf_counter(), time.process_time()
            uploader = client.TusClient(sys.argv[1]).uploader(
                sys.argv[2], chunk_size=int(sys.argv[3]),
                metadata={"filename": "blob-bench.bin", "filetype": "application/octet-stream"})
            uploader.upload()
            print(uploader.url, time.perf_counter() - start, time.process_time() - cpu)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, endpoint.absoluteString, file, String(chunkSize)]
        if let certificateAuthorities {
            // tuspy verifies with python-requests, which takes its CAs from REQUESTS_CA_BUNDLE.
            process.environment = ProcessInfo.processInfo.environment.merging(["REQUESTS_CA_BUNDLE": certificateAuthorities]) { $1 }
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let childCPUBefore = Measurement.cpuSeconds(RUSAGE_CHILDREN)
        do {
            try process.run()
        } catch {
            return .failure(error)
        }
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let ended = ChildExit.waitForever(process)
        let childCPU = Measurement.cpuSeconds(RUSAGE_CHILDREN) - childCPUBefore
        let fields = printed.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard ended == .success, fields.count == 3, let url = URL(string: fields[0]),
              let seconds = Double(fields[1]), let uploadCPU = Double(fields[2]) else {
            return .failure(BenchmarkError("tuspy exited with \(ended.code), printing \"\(printed)\""))
        }
        _ = waitForAsync { () async throws(BlobUploadError) in try await TusClient(endpoint: endpoint, transport: transport).terminate(url) }
        return .success(Run(seconds: seconds, childCPUSeconds: childCPU, uploadCPUSeconds: uploadCPU))
    }
}

/// How the upload scenarios report trouble.
private enum UploadBenchmark {
    static func complain(_ message: String) {
        FileHandle.standardError.write(Data("blob-bench: \(message)\n".utf8))
    }
}
