/// Where a request's connection goes: a host, a port, and whether it speaks TLS (`https:`).
/// Derived from the request's URL only (``HTTPRequestHead/endpoint``), so an `https:` request
/// can never go out in plain text; pooled connections are kept per endpoint.
package struct HTTP1Endpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address, as the URL names it.
    package let host: String
    /// The port, the scheme's default when the URL names none.
    package let port: Int
    /// Whether the connection speaks TLS.
    package let isSecure: Bool

    /// An endpoint.
    package init(host: String, port: Int, isSecure: Bool) {
        self.host = host
        self.port = port
        self.isSecure = isSecure
    }

    /// `host:port`, as messages name it.
    package var description: String { "\(host):\(port)" }
}

extension HTTP1Connection {
    /// Connects to `endpoint` within `wait`, with a TLS handshake trusting `trust` when the
    /// endpoint is secure (see ``connect(host:port:wait:tls:)``).
    package func connect(to endpoint: HTTP1Endpoint, trust: TLSConfiguration, wait: HTTP1Wait) throws(HTTP1Error) {
        try connect(host: endpoint.host, port: endpoint.port, wait: wait, tls: endpoint.isSecure ? trust : nil)
    }
}
