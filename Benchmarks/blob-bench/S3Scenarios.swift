import BlobStream
import BlobUpload
import Foundation
import Synchronization
import SystemCalls

/// The `s3` group: the same 256 MiB file (the benchmark file, or a 256 MiB one beside it when
/// `--size` is larger) uploaded to moto's S3 server (127.0.0.1:18100, started by
/// `Scripts/test-servers.sh up`) in interleaved rounds:
///
/// - `s3-multipart-8m`: ``S3Client`` in this process, 8 MiB parts, 4 in flight, CRC-32C per
///   part; against `aws s3 cp (s3 baseline)`, the AWS CLI (s3transfer: 10 threads, 8 MiB
///   parts, its default CRC-32 per part) run as a child.
///   Extras: `cpu_s` (this process's user+system time around the upload, `getrusage(SELF)`:
///   no process start), `aws_cpu_s` (the aws child's, from `getrusage(CHILDREN)`, interpreter
///   start included), `cpu_ratio` = `cpu_s / aws_cpu_s` (target at most 0.3),
///   `aws_start_cpu_s` (the child's CPU for `aws s3 cp` of a 1-byte file: start-up and fixed
///   costs) with `cpu_ratio_upload_only` = `cpu_s / (aws_cpu_s - aws_start_cpu_s)`, and
///   `peak_rss_growth_mib` (peak resident size above the idle size; target at most parts in
///   flight × part size + 16 MiB = 48 MiB), `journal_mbps` (the same upload with a
///   `FileUploadJournal`, an entry write per part) and `journal_ratio` = `journal_mbps / mbps`
///   (the journal must cost no measurable throughput: about 1.0). Throughput target: at least 1.0×.
/// - `curl_put_mbps`: the server's ceiling, one `curl -T` PutObject of the file (moto's
///   multipart path is several times slower than its single PUT).
func s3Scenarios(file: String, fileSize: Int) -> [ScenarioResult] {
    s3MultipartScenario(file: file, fileSize: fileSize, endpoint: URL(string: "http://127.0.0.1:18100")!, certificateAuthorities: nil,
                        scenario: "s3-multipart-8m", baseline: "aws s3 cp (s3 baseline)")
}

/// One S3 scenario, as described on ``s3Scenarios(file:fileSize:)``, against the moto at
/// `endpoint`: the plain 18100 or its TLS proxy `https://127.0.0.1:18500`. With
/// `certificateAuthorities` (a PEM file), ``S3Client`` trusts only those authorities
/// (`S3Configuration.trust`), the AWS CLI gets `--ca-bundle` and curl `--cacert`.
func s3MultipartScenario(
    file: String, fileSize: Int, endpoint: URL, certificateAuthorities: String?, scenario: String, baseline: String
) -> [ScenarioResult] {
    let failed = [ScenarioResult(scenario: baseline, mbps: 0, baseline: baseline, ratio: 1),
                  ScenarioResult(scenario: scenario, mbps: 0, baseline: baseline, ratio: 0)]
    let server = S3Bench.Server(endpoint: endpoint, certificateAuthorities: certificateAuthorities)
    let size = min(fileSize, S3Bench.size)
    let path: String
    let bucket = "blob-bench-\(getpid())"
    do {
        try LoopbackServers.start()
        path = size == fileSize ? file : try BenchmarkFile.prepare(size: size, directory: (file as NSString).deletingLastPathComponent)
        try server.aws(["s3", "mb", "s3://\(bucket)"])
    } catch {
        S3Bench.complain("\(scenario) scenario: \(error)")
        return failed
    }
    defer { try? server.aws(["s3", "rb", "--force", "s3://\(bucket)"]) }
    var oursBest = 0.0, awsBest = 0.0, curlBest = 0.0, journaledBest = 0.0
    let journal = BenchJournal()
    defer { journal.remove() }
    var ourCPU = Double.infinity, awsCPU = Double.infinity, peakGrowth = 0
    var awsStartCPU = Double.infinity
    do {
        let tiny = NSTemporaryDirectory() + "blob-bench-s3-tiny-\(getpid())"
        _ = FileManager.default.createFile(atPath: tiny, contents: Data([1]))
        defer { try? FileManager.default.removeItem(atPath: tiny) }
        for _ in 0..<S3Bench.rounds {
            let run = try server.ours(file: path, size: size, bucket: bucket)
            oursBest = max(oursBest, Double(size) / 1e6 / run.seconds)
            ourCPU = min(ourCPU, run.cpu)
            peakGrowth = max(peakGrowth, run.peakGrowth)
            // The same upload recorded in an upload journal (an entry write per part).
            journaledBest = max(journaledBest, Double(size) / 1e6 / (try server.ours(file: path, size: size, bucket: bucket, journal: journal.journal)).seconds)
            let aws = try S3Bench.child { try server.aws(["s3", "cp", "--only-show-errors", path, "s3://\(bucket)/aws.bin"]) }
            awsBest = max(awsBest, Double(size) / 1e6 / aws.seconds)
            awsCPU = min(awsCPU, aws.cpu)
            awsStartCPU = min(awsStartCPU, try S3Bench.child { try server.aws(["s3", "cp", "--only-show-errors", tiny, "s3://\(bucket)/tiny"]) }.cpu)
            let curl = try S3Bench.child { _ = try Measurement.seconds(ofCommand: server.curlPut(path, bucket: bucket)) }
            curlBest = max(curlBest, Double(size) / 1e6 / curl.seconds)
        }
    } catch {
        S3Bench.complain("\(scenario) scenario: \(error)")
        return failed
    }
    let uploadOnly = awsCPU - awsStartCPU
    return [
        ScenarioResult(scenario: baseline, mbps: awsBest, baseline: baseline, ratio: 1,
                       extras: ["cpu_s": awsCPU, "start_cpu_s": awsStartCPU, "curl_put_mbps": curlBest]),
        ScenarioResult(
            scenario: scenario, mbps: oursBest, baseline: baseline, ratio: awsBest > 0 ? oursBest / awsBest : 0,
            extras: [
                "cpu_s": ourCPU, "aws_cpu_s": awsCPU, "aws_start_cpu_s": awsStartCPU,
                "cpu_ratio": awsCPU > 0 ? ourCPU / awsCPU : 0,
                "cpu_ratio_upload_only": uploadOnly > 0 ? ourCPU / uploadOnly : 0,
                "peak_rss_growth_mib": Double(peakGrowth) / Double(1 << 20),
                "curl_put_mbps": curlBest, "ratio_vs_curl_put": curlBest > 0 ? oursBest / curlBest : 0,
                "journal_mbps": journaledBest, "journal_ratio": oursBest > 0 ? journaledBest / oursBest : 0,
            ]),
    ]
}

private enum S3Bench {
    static let size = 256 << 20
    static let rounds = 2
    static let environment = ["AWS_ACCESS_KEY_ID": "blob-bench", "AWS_SECRET_ACCESS_KEY": "blob-bench", "AWS_REGION": "us-east-1"]

    struct Run {
        var seconds: Double
        var cpu: Double
        var peakGrowth = 0
    }

    /// A moto, plain or behind TLS, and how each client reaches it.
    struct Server {
        var endpoint: URL
        var certificateAuthorities: String?

        /// Runs the AWS CLI against moto.
        func aws(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["aws", "--endpoint-url", endpoint.absoluteString]
                + (certificateAuthorities.map { ["--ca-bundle", $0] } ?? []) + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(S3Bench.environment) { $1 }
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let ended = ChildExit.waitForever(process)
            guard ended == .success else {
                throw BenchmarkError("aws \(arguments.joined(separator: " ")) exited with \(ended.code) "
                    + "(Scripts/test-servers.sh up installs awscli)")
            }
        }

        /// `curl -T` as one PutObject (moto does not check the signature it is given).
        func curlPut(_ path: String, bucket: String) -> [String] {
            ["curl", "-s", "-f", "-o", "/dev/null"] + (certificateAuthorities.map { ["--cacert", $0] } ?? []) + ["-T", path, "-H",
             "Authorization: AWS4-HMAC-SHA256 Credential=blob-bench/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00",
             "\(endpoint.absoluteString)/\(bucket)/curl.bin"]
        }

        /// One ``S3Client`` upload in this process.
        func ours(file: String, size: Int, bucket: String, journal: FileUploadJournal? = nil) throws -> Run {
            let client = try S3Client(configuration: S3Configuration(
                endpoint: endpoint, bucket: bucket,
                credentials: S3Credentials(accessKeyID: "blob-bench", secretAccessKey: "blob-bench"),
                trust: certificateAuthorities.map { .certificateAuthorities(file: $0) } ?? .system))
            LoopbackServers.resetPeakResidentSize()
            let idle = Measurement.residentBytes()
            let cpuBefore = Measurement.cpuSeconds(RUSAGE_SELF)
            let start = DispatchTime.now().uptimeNanoseconds
            var options = S3UploadOptions()
            options.journal = journal
            let settings = options
            let outcome = waitForAsync { () async throws(S3Error) in
                try await client.upload(.file(path: file), key: "ours.bin", options: settings)
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let cpu = Measurement.cpuSeconds(RUSAGE_SELF) - cpuBefore
            let growth = max(0, Measurement.peakResidentBytes() - idle)
            let upload = try outcome.get()
            guard upload.length == Int64(size), upload.partCount == (size + (8 << 20) - 1) / (8 << 20) else {
                throw BenchmarkError("S3Client uploaded \(upload.length) bytes in \(upload.partCount) parts")
            }
            return Run(seconds: seconds, cpu: cpu, peakGrowth: growth)
        }
    }

    /// Times `body`, which runs one child to its end, with the child's CPU time.
    static func child(_ body: () throws -> Void) throws -> Run {
        let before = Measurement.cpuSeconds(RUSAGE_CHILDREN)
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Run(seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, cpu: Measurement.cpuSeconds(RUSAGE_CHILDREN) - before)
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data("blob-bench: \(message)\n".utf8))
    }
}
