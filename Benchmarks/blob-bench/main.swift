import Foundation

/// blob-bench: throughput of BlobStream's paths against baselines measured in the same run.
///
///     swift run -c release blob-bench [--json] [--no-verdict] [--size BYTES] [--runs N] [--only GROUP,...]
///
/// Groups: core (file reads), checksums (each algorithm against openssl, md5sum or zlib), asset (asset-store source), http (HTTP source against curl; starts
/// the loopback servers through Scripts/test-servers.sh), upload (tus against tuspy, streamed PUT
/// against URLSession and curl), urlprotocol (asset:// through URLSession and BlobURLProtocol
/// against BlobInputStream), s3 (S3Client against `aws s3 cp` on moto), https (the http, PUT, tus
/// and s3 scenarios over the test servers' TLS ports, against the same baselines over TLS). Every scenario prints its MB/s and its ratio to its baseline;
/// every scenario that is not a baseline has targets (see `Targets`) and is marked met or
/// MISSED. The process exits 1 when any target is missed (or a scenario cannot run), unless
/// `--no-verdict` is given, and 64 for a wrong command line.
struct Options {
    var json = false
    var verdict = true
    var size = 1 << 30
    var runs = 5
    var groups: Set<String> = ["core"]
    var directory = NSTemporaryDirectory() + "blobstream-bench"

    static let allGroups: Set<String> = ["core", "checksums", "asset", "upload", "http", "urlprotocol", "s3", "https"]

    init(_ arguments: [String]) throws {
        groups = Self.allGroups
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": json = true
            case "--no-verdict": verdict = false
            // Bounded, so a typo cannot fill the disk or run for days.
            case "--size": size = try Self.integer(rest.popFirst(), for: argument, in: (1 << 20)...(64 << 30))
            case "--runs": runs = try Self.integer(rest.popFirst(), for: argument, in: 1...100)
            case "--only":
                groups = Set((rest.popFirst() ?? "").split(separator: ",").map(String.init))
                guard !groups.isEmpty, groups.isSubset(of: Self.allGroups) else {
                    throw BenchmarkError("--only takes groups from: \(Self.allGroups.sorted().joined(separator: ","))")
                }
            case "--help", "-h":
                print("usage: blob-bench [--json] [--no-verdict] [--size BYTES] [--runs N] [--only \(Self.allGroups.sorted().joined(separator: ","))]")
                exit(0)
            default: throw BenchmarkError("unknown argument \(argument); see --help")
            }
        }
    }

    private static func integer(_ value: String?, for option: String, in bounds: ClosedRange<Int>) throws -> Int {
        guard let value, let number = Int(value), bounds.contains(number) else {
            throw BenchmarkError("\(option) takes an integer from \(bounds.lowerBound) to \(bounds.upperBound), not '\(value ?? "")'")
        }
        return number
    }
}

func report(_ assessment: Assessment, json: Bool) {
    let result = assessment.result
    if json {
        var object: [String: Any] = [
            "scenario": result.scenario, "mbps": (result.mbps * 10).rounded() / 10,
            "baseline": result.baseline, "ratio": (result.ratio * 1000).rounded() / 1000,
        ]
        for (key, value) in result.extras { object[key] = value }
        if let met = assessment.met {
            object["target"] = assessment.targetDescription
            object["met"] = met
        }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    } else {
        let extras = result.extras.sorted { $0.key < $1.key }.map { "  \($0.key)=\(String(format: "%.2f", $0.value))" }.joined()
        let name = result.scenario.padding(toLength: max(40, result.scenario.count), withPad: " ", startingAt: 0)
        let verdict = assessment.met.map { met in
            "  [\(met ? "met" : "MISSED"): \(assessment.targetDescription ?? "")]"
        } ?? ""
        print(name + String(format: " %9.1f MB/s  %6.3fx ", result.mbps, result.ratio) + result.baseline + verdict + extras)
    }
    fflush(nil)
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    // 64 (EX_USAGE), so a wrong command line is not mistaken for a missed target (1).
    FileHandle.standardError.write(Data("blob-bench: \(error)\n".utf8))
    exit(64)
}
do {
    let file = try BenchmarkFile.prepare(size: options.size, directory: options.directory)
    if !options.json {
        print("blob-bench: \(options.size) bytes in page cache, best of \(options.runs) runs; ratio = MB/s / baseline MB/s")
    }
    // Each group, in the order they run; a group measures its own baselines in the same run.
    let groups: [(name: String, run: () throws -> [ScenarioResult])] = [
        ("core", { try CoreScenarios.run(file: file, size: options.size, runs: options.runs) }),
        ("checksums", { checksumScenarios(file: file, fileSize: options.size) }),
        ("asset", { assetScenarios(file: file, fileSize: options.size, runs: options.runs) }),
        ("upload", { uploadScenarios(file: file, fileSize: options.size) }),
        ("http", { httpScenarios(file: file, fileSize: options.size, runs: options.runs) }),
        ("urlprotocol", { urlProtocolScenarios(file: file, fileSize: options.size, runs: options.runs) }),
        ("s3", { s3Scenarios(file: file, fileSize: options.size) }),
        ("https", { httpsScenarios(file: file, fileSize: options.size, runs: options.runs) }),
    ]
    var assessed: [Assessment] = []
    for group in groups where options.groups.contains(group.name) {
        for result in try group.run() {
            let assessment = Assessment(result)
            assessed.append(assessment)
            report(assessment, json: options.json)
        }
    }
    let judged = assessed.filter { $0.met != nil }
    let missed = judged.filter { $0.met == false }
    // The verdict goes to standard error with --json, so standard output stays one object a line.
    let summary = missed.isEmpty
        ? "blob-bench: verdict: all \(judged.count) scenarios met their targets\n"
        : "blob-bench: verdict: \(missed.count) of \(judged.count) scenarios missed their targets: "
            + missed.map { "\($0.result.scenario) (\($0.misses))" }.joined(separator: "; ") + "\n"
    FileHandle(fileDescriptor: options.json ? 2 : 1).write(Data(summary.utf8))
    if options.verdict && !missed.isEmpty { exit(1) }
} catch {
    FileHandle.standardError.write(Data("blob-bench: \(error)\n".utf8))
    exit(1)
}
