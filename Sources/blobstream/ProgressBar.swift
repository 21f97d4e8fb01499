import BlobStream
import Foundation
internal import SystemCalls

/// A one-line progress display on standard error (only used when it is a terminal): a bar,
/// the percentage and the throughput, or just bytes and throughput when the total is unknown.
/// Redraws at most ten times a second, so it costs nothing next to the hashing.
final class ProgressBar {
    private let console: Console
    private let label: String
    private let started = DispatchTime.now().uptimeNanoseconds
    private var lastDraw: UInt64 = 0
    private var drawn = false

    init(console: Console, label: String) {
        self.console = console
        // Hidden before the label is shortened: a cut that drops `scheme://` would leave the
        // rest of a password where nothing recognises it any more.
        self.label = PasswordRedaction.hidingPasswords(in: label)
    }

    /// Redraws for `progress`, with the rate and, when the total is known, the time left; at
    /// most every 100 ms.
    func update(_ progress: TransferProgress) {
        let (done, total) = (progress.completedBytes, progress.totalBytes)
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw >= 100_000_000 else { return }
        lastDraw = now
        drawn = true
        let seconds = max(Double(now - started) / 1e9, 1e-3)
        let speed = Double(done) / seconds
        let rate = "\(Self.bytes(speed))/s"
        let width = Self.terminalWidth()
        var status: String
        if let total, total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let eta = speed > 0 ? "  ETA " + Self.duration(Double(total - done) / speed) : ""
            status = String(format: " %3d%%  %@ / %@  %@", Int(fraction * 100),
                            Self.bytes(Double(done)), Self.bytes(Double(total)), rate) + eta
            let barWidth = max(10, min(40, width - status.count - 20))
            let filled = Int(fraction * Double(barWidth))
            status = " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]" + status
        } else {
            status = "  \(Self.bytes(Double(done)))  \(rate)"
        }
        let room = max(0, width - status.count - 1)
        let name = label.count <= room ? label : "…" + label.suffix(max(0, room - 1))
        console.standardError("\r" + name + status + "\u{1B}[K")
    }

    private static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole >= 3600
            ? String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
            : String(format: "%d:%02d", whole / 60, whole % 60)
    }

    /// Erases the line, so the terminal shows only the results.
    func finish() {
        if drawn { console.standardError("\r\u{1B}[K") }
    }

    private static func bytes(_ count: Double) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = count, unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f %@", value, units[unit])
    }

    private static func terminalWidth() -> Int {
        FileDescriptor.standardError.terminalColumns ?? 80
    }
}
