import Foundation

/// The slowest a bulk transfer (a download's body, an upload's request body) may go, in the
/// manner of curl's `--speed-limit` and `--speed-time`: averaging fewer than
/// ``bytesPerSecond`` over ``seconds`` fails the transfer with a time-out that names the URL,
/// the offset and the measured rate. Only time spent waiting on the network counts: a download
/// paused because its reader is behind, or an upload reading its next chunk, is not slow.
///
/// It is what ends a peer that sends (or reads) one byte at a time, which a time-out for
/// silence never does: each byte starts the silence again.
public struct MinimumSpeed: Sendable, Hashable {
    /// The lowest average speed, in bytes per second, over ``seconds``; 0 turns the rule off.
    public var bytesPerSecond: Int
    /// How long, in seconds, the speed may stay below ``bytesPerSecond`` before the transfer
    /// fails.
    public var seconds: TimeInterval

    /// A rule: below `bytesPerSecond` for `seconds` fails.
    public init(bytesPerSecond: Int, seconds: TimeInterval) {
        self.bytesPerSecond = bytesPerSecond
        self.seconds = seconds
    }

    /// The default: 1 KiB/s over 30 s. Any working network is far faster; a peer that
    /// trickles is not.
    public static let standard = MinimumSpeed(bytesPerSecond: 1024, seconds: 30)

    /// No minimum (only the time-outs for silence apply).
    public static let off = MinimumSpeed(bytesPerSecond: 0, seconds: 30)
}
