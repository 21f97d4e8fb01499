import BlobStream
import Foundation
internal import SystemCalls

/// A one-line progress display on standard error (only used when it is a terminal): a bar,
/// the percentage and the throughput, or just bytes and throughput when the total is unknown;
/// for an upload, bytes the server confirmed apart from bytes merely sent.
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
    /// most every 100 ms. Where the upload tells bytes sent apart from bytes the server
    /// confirmed (``TransferProgress/sentBytes``), the bar shows both: `#` confirmed, `=` sent
    /// and not confirmed yet, and the text says how much was sent; the rate is that of the
    /// bytes sent.
    func update(_ progress: TransferProgress) {
        let (done, total) = (progress.completedBytes, progress.totalBytes)
        let sent = max(progress.sentBytes ?? done, done)
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw >= 100_000_000 else { return }
        lastDraw = now
        drawn = true
        let seconds = max(Double(now - started) / 1e9, 1e-3)
        let speed = Double(sent) / seconds
        let rate = "\(Self.bytes(speed))/s"
        let unconfirmed = sent > done ? "  (\(Self.bytes(Double(sent))) sent)" : ""
        let width = Self.terminalWidth()
        var status: String
        if let total, total > 0 {
            let fraction = min(1, Double(done) / Double(total))
            let sentFraction = min(1, Double(sent) / Double(total))
            let eta = speed > 0 ? "  ETA " + Self.duration(Double(max(0, total - sent)) / speed) : ""
            status = String(format: " %3d%%  %@ / %@%@  %@", Int(fraction * 100),
                            Self.bytes(Double(done)), Self.bytes(Double(total)), unconfirmed, rate) + eta
            let barWidth = max(10, min(40, width - status.count - 20))
            let filled = Int(fraction * Double(barWidth))
            let inFlight = max(0, Int(sentFraction * Double(barWidth)) - filled)
            status = " [" + String(repeating: "#", count: filled) + String(repeating: "=", count: inFlight)
                + String(repeating: "-", count: barWidth - filled - inFlight) + "]" + status
        } else {
            status = "  \(Self.bytes(Double(done)))\(unconfirmed)  \(rate)"
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
