import Foundation

/// One measured scenario: its throughput and its ratio to the baseline measured in the same run.
struct ScenarioResult: Sendable {
    /// What was measured, e.g. `"blobinputstream-sync"`.
    var scenario: String
    /// Throughput in megabytes (10^6 bytes) per second.
    var mbps: Double
    /// The scenario this one is compared with, measured in the same run.
    var baseline: String
    /// `mbps / baseline mbps` (or, for scenarios whose target is a cost, as documented there).
    var ratio: Double
    /// Extra figures printed after the ratio (peak RSS, CPU seconds, calls per MiB).
    var extras: [String: Double] = [:]
}
