/// Who sets a header field itself, so that a caller's field of that name would contradict it
/// (or smuggle a second framing or request): the one list behind the client's head writer,
/// the HTTP source, the tus client and the command line's `-H`. Each reacts in its own way —
/// the head writer leaves such a field out, the tus client and `-H` refuse it.
package enum HTTPFieldOwner: Sendable {
    /// Any request on this client: framing, routing, hop-by-hop fields. `Expect` among them:
    /// the client sends a body at once, and a `100 Continue` drawn by a caller's
    /// `Expect: 100-continue` while the body is under way would stop the sender as an early
    /// answer.
    case http
    /// A tus request, on top: the protocol's own fields and the PATCH body's type.
    case tus
    /// A range download (the HTTP source), on top: the range it asks for and its coding.
    case download

    private static let framing: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "te", "trailer", "upgrade", "expect",
    ]

    /// Whether the field `name` (any case) is set by this owner.
    package func owns(_ name: String) -> Bool {
        let name = name.lowercased()
        if Self.framing.contains(name) { return true }
        switch self {
        case .http: return false
        case .tus: return name == "tus-resumable" || name == "content-type" || name.hasPrefix("upload-")
        case .download: return name == "range" || name == "if-range" || name == "accept-encoding"
        }
    }
}
