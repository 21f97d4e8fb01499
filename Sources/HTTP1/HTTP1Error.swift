/// Why an HTTP/1.1 exchange ended without its answer: the one error of the connection, the head
/// parser and the body decoder. Each module maps it onto its own public error, which names the
/// URL.
package enum HTTP1Error: Error, Sendable, Equatable {
    /// ``HTTP1Connection/cancel()`` was called.
    case cancelled
    /// A wait passed its deadline.
    case timedOut
    /// A bulk transfer went slower than its ``HTTP1Pace`` allows: `bytes` in `seconds` of
    /// waiting, below `minimumBytesPerSecond`. A time-out too, which names the rate.
    case tooSlow(bytes: Int, seconds: Double, minimumBytesPerSecond: Int)
    /// The connection could not be made or broke; `cause` says which way, for callers that
    /// map it onto `URLError` codes.
    case network(reason: String, cause: NetworkCause)
    /// The peer broke HTTP/1.1: a malformed or oversized head, unusable framing, a malformed
    /// chunk. Asking again will not help.
    case protocolViolation(reason: String)
    /// An answer read with `failingPastLimit` has a body longer than `limit` bytes: valid
    /// HTTP/1.1, but more than the request's protocol ever answers (S3's small XML answers).
    case answerTooLong(limit: Int)

    /// How a connection failed.
    package enum NetworkCause: Sendable, Equatable {
        /// The host name did not resolve.
        case unresolved
        /// Nothing accepted the connection.
        case refused
        /// The connection broke, or the peer closed it too early.
        case lost
        /// The TLS handshake was refused: a certificate that does not verify (expired, for
        /// another name, from an unknown issuer), no protocol version in common, a trust store
        /// that cannot be loaded. Asking again will not help.
        case secureConnectionFailed
    }

    /// A short text for messages.
    package var reason: String {
        switch self {
        case .cancelled: "cancelled"
        case .timedOut: "timed out"
        case .tooSlow(let bytes, let seconds, let minimum):
            "too slow: \(bytes) bytes in \(Self.format(seconds)) s (\(Self.format(Double(bytes) / max(seconds, 0.001))) bytes/s), "
                + "below the minimum of \(minimum) bytes/s"
        case .network(let reason, _), .protocolViolation(let reason): reason
        case .answerTooLong(let limit): "the answer's body is longer than \(limit) bytes"
        }
    }

    /// `value` with at most two decimals, for messages.
    private static func format(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
    }
}
