import Foundation

/// The origin of a URL: its scheme, host and effective port. Header fields a caller gives for
/// one URL — credentials in particular — belong to its origin, and no request of this package
/// carries them to another one.
struct URLOrigin: Hashable, CustomStringConvertible {
    let scheme: String
    let host: String
    /// The port, or the scheme's default one; `nil` for a scheme without a known default.
    let port: Int?

    init(_ url: URL) {
        scheme = url.scheme?.lowercased() ?? ""
        host = url.host?.lowercased() ?? ""
        port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }

    /// `scheme://host:port`, as error messages name it.
    var description: String {
        "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
