import Foundation

/// The origin of a URL: its scheme, host and effective port. Header fields a caller gives for
/// one URL — credentials in particular — belong to its origin, and no request of this package
/// carries them to another one. The HTTP source and the upload clients share this one rule.
package struct URLOrigin: Hashable, CustomStringConvertible {
    /// The scheme, lowercased.
    package let scheme: String
    /// The host, lowercased.
    package let host: String
    /// The port, or the scheme's default one; `nil` for a scheme without a known default.
    package let port: Int?

    /// The origin of `url`.
    package init(_ url: URL) {
        scheme = url.scheme?.lowercased() ?? ""
        host = url.host?.lowercased() ?? ""
        port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }

    /// The port to connect to for `url` (its scheme's default when it names none), or `nil`
    /// when the port it names is unusable: outside 1...65535 (`getaddrinfo` would cut 65617
    /// to 81 and connect there), or too large for `URL` to parse at all (`URL.port` is then
    /// `nil`, which would have meant the default port).
    package static func usablePort(of url: URL) -> Int? {
        if let port = url.port { return (1...65535).contains(port) ? port : nil }
        if namesPort(url.absoluteString) { return nil }
        switch url.scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// Whether the authority of the URL `text` has a non-empty port after its host.
    private static func namesPort(_ text: String) -> Bool {
        guard let start = text.range(of: "://")?.upperBound else { return false }
        var authority = text[start...].prefix { !"/?#".contains($0) }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            authority = authority[authority.index(after: close)...]
        }
        guard let colon = authority.firstIndex(of: ":") else { return false }
        return authority.index(after: colon) < authority.endIndex
    }

    /// `scheme://host:port`, as error messages name it.
    package var description: String {
        "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
