import BlobStream
import Foundation

/// A goal a scenario must reach: a bound on its ratio to the baseline, its throughput, or one
/// of its extras (CPU time, memory).
struct Target: Sendable, CustomStringConvertible {
    /// `ratio`, `mbps`, or the name of an extra.
    var metric: String
    /// Whether the value must be at least or at most ``limit``.
    var atLeast: Bool
    var limit: Double

    static func ratio(atLeast limit: Double) -> Target { Target(metric: "ratio", atLeast: true, limit: limit) }
    static func mbps(atLeast limit: Double) -> Target { Target(metric: "mbps", atLeast: true, limit: limit) }
    static func extra(_ name: String, atMost limit: Double) -> Target { Target(metric: name, atLeast: false, limit: limit) }
    static func extra(_ name: String, atLeast limit: Double) -> Target { Target(metric: name, atLeast: true, limit: limit) }

    /// `ratio >= 0.95`, `cpu_ratio <= 0.4`.
    var description: String {
        "\(metric) \(atLeast ? ">=" : "<=") \(Self.format(limit))"
    }

    /// `0.95`, `5000`: no trailing zeros, no grouping.
    static func format(_ value: Double) -> String { String(format: "%g", value) }

    /// The measured value, or `nil` when the scenario did not produce it.
    func value(in result: ScenarioResult) -> Double? {
        switch metric {
        case "ratio": return result.ratio
        case "mbps": return result.mbps
        default: return result.extras[metric]
        }
    }

    /// Whether `result` reaches the goal. A scenario that failed (0 MB/s) reaches none.
    func isMet(by result: ScenarioResult) -> Bool {
        guard result.mbps > 0, let value = value(in: result) else { return false }
        return atLeast ? value >= limit : value <= limit
    }
}

/// Every scenario's goals, in one place, so the table, `--json` and the exit status agree and
/// a new scenario without a goal is noticed (it fails the verdict until it gets one).
///
/// Each goal is what the scenario exists to show: throughput against the baseline where speed
/// is the point, CPU or memory where the point is cost at the speed the server allows.
enum Targets {
    /// The goals of `scenario`; empty for a baseline or a reference row.
    static func targets(for result: ScenarioResult) -> [Target]? {
        if result.scenario == result.baseline || references.contains(result.scenario) { return [] }
        let name = result.scenario
        switch name {
        case "blobinputstream-sync-64k": return [.ratio(atLeast: 0.95)]
        case "blobinputstream-async-queue-64k", "blobinputstream-async-runloop-64k": return [.ratio(atLeast: 0.9)]
        case "blobchunks-1mib": return [.ratio(atLeast: 0.95)]
        case "scale-256-async-streams":
            // Threads: 2 per core and 8 more, whatever the number of streams; memory: one
            // block (the asynchronous default, 256 KiB) per stream and 16 MiB.
            let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
            let blockMiB = Double(BlobInputStream.minimumAsynchronousBlockSize) / Double(1 << 20)
            return [
                .ratio(atLeast: 0.85), .extra("peak_threads", atMost: 2 * cores + 8),
                .extra("peak_rss_growth_mib", atMost: 256 * blockMiB + 16),
            ]
        case "sha256-blobinputstream-file", "sha1-blobinputstream-file", "md5-blobinputstream-file": return [.ratio(atLeast: 0.8)]
        case "crc32-blobinputstream-file": return [.ratio(atLeast: 1.0)]
        case "crc32c-memory": return [.mbps(atLeast: 5000)]
        case "crc32c-blobinputstream-file": return [.ratio(atLeast: 0.3)]
        case "asset-directory-sync-64k": return [.ratio(atLeast: 0.8)]
        case "urlprotocol-delegate-task": return [.ratio(atLeast: 0.5), .extra("peak_rss_growth_mib", atMost: 64)]
        case "urlprotocol-async-data": return [.ratio(atLeast: 0.5)]
        case "http-source-sync-64k": return [.ratio(atLeast: 1.0), .extra("peak_rss_growth_mib", atMost: 64)]
        case "tus-upload-4m": return [.ratio(atLeast: 1.0), .extra("cpu_ratio", atMost: 0.4), .extra("peak_rss_growth_mib", atMost: 64), .extra("journal_ratio", atLeast: 0.9)]
        case "put-blobinputstream": return [.ratio(atLeast: 1.3), .extra("peak_rss_growth_mib", atMost: 64)]
        // 4 parts in flight × 8 MiB + 16 MiB.
        case "s3-multipart-8m": return [.ratio(atLeast: 1.0), .extra("cpu_ratio", atMost: 0.3), .extra("peak_rss_growth_mib", atMost: 48), .extra("journal_ratio", atLeast: 0.9)]
        // The https group: each against the same baseline over the same TLS server.
        case "https-source-sync-64k", "put-https": return [.ratio(atLeast: 1.0)]
        case "tus-upload-https": return [.ratio(atLeast: 1.0), .extra("cpu_ratio", atMost: 0.4), .extra("journal_ratio", atLeast: 0.9)]
        case "s3-multipart-https": return [.ratio(atLeast: 1.0), .extra("cpu_ratio", atMost: 0.3), .extra("peak_rss_growth_mib", atMost: 48), .extra("journal_ratio", atLeast: 0.9)]
        default:
            if name.hasPrefix("sha256-") && name.hasSuffix("mib-file-through-blobinputstream") { return [.ratio(atLeast: 0.9)] }
            return nil
        }
    }

    /// Rows shown for comparison that are neither ours nor the baseline: Foundation's own file
    /// stream, what an app gets without this library.
    static let references: Set<String> = ["foundation-inputstream-64k"]
}

/// The goals of one scenario and whether it met them.
struct Assessment {
    var targets: [Target]?
    var result: ScenarioResult

    /// `nil` for baselines and references; `false` for a scenario without a goal.
    var met: Bool? {
        guard let targets else { return false }
        return targets.isEmpty ? nil : targets.allSatisfy { $0.isMet(by: result) }
    }

    /// `ratio >= 0.95, peak_rss_growth_mib <= 64`, or why there is none.
    var targetDescription: String? {
        guard let targets else { return "none set" }
        return targets.isEmpty ? nil : targets.map(\.description).joined(separator: ", ")
    }

    /// What missed, with the measured values: `ratio 0.85 < 1.3`.
    var misses: String {
        guard let targets else { return "no target set for this scenario" }
        return targets.filter { !$0.isMet(by: result) }.map { target in
            let value = target.value(in: result).map { String(format: "%.3g", $0) } ?? "missing"
            return "\(target.metric) \(value) \(target.atLeast ? "<" : ">") \(Target.format(target.limit))"
        }.joined(separator: ", ")
    }

    init(_ result: ScenarioResult) {
        self.result = result
        targets = Targets.targets(for: result)
    }
}
