/// Why an HTTP/1.1 exchange ended without its answer: the one error of the connection, the head
/// parser and the body decoder. Each module maps it onto its own public error, which names the
/// URL.
package enum HTTP1Error: Error, Sendable, Equatable {
    /// ``HTTP1Connection/cancel()`` was called.
    case cancelled
    /// A wait passed its deadline.
    case timedOut
    /// The connection could not be made or broke; `cause` says which way, for callers that
    /// map it onto `URLError` codes.
    case network(reason: String, cause: NetworkCause)
    /// The peer broke HTTP/1.1: a malformed or oversized head, unusable framing, a malformed
    /// chunk. Asking again will not help.
    case protocolViolation(reason: String)

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
        case .network(let reason, _), .protocolViolation(let reason): reason
        }
    }
}
