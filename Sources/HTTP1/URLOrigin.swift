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

    /// `scheme://host:port`, as error messages name it.
    package var description: String {
        "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
