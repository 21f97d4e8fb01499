package import HTTP1

/// Which certificate authorities the package's own HTTP client trusts for `https:`.
///
/// Whatever the trust, the certificate chain and the host name (or IP address) are always
/// verified, TLS 1.2 is the least version, and there is no way to turn verification off.
public struct TLSTrust: Sendable, Hashable {
    /// A PEM file of the only authorities to trust, or `nil` for the system's store.
    public let certificateAuthorityFile: String?

    /// The system's store (Debian: `/etc/ssl/certs`, kept by `update-ca-certificates`);
    /// `SSL_CERT_FILE` replaces its default bundle and `SSL_CERT_DIR` its default directory,
    /// each on its own, as for curl and Python.
    public static let system = TLSTrust(certificateAuthorityFile: nil)

    /// Only the authorities in the PEM file at `path` (curl's `--cacert`): a private CA, a
    /// test CA.
    public static func certificateAuthorities(file path: String) -> TLSTrust {
        TLSTrust(certificateAuthorityFile: path)
    }

    /// Whether this build speaks TLS on its own client (Linux, with the system's OpenSSL 3);
    /// elsewhere `https:` goes through URLSession, which keeps the system's trust.
    public static var isAvailable: Bool { TLSConfiguration.isAvailable }

    /// The trust as the package's own client takes it.
    package var configuration: TLSConfiguration {
        TLSConfiguration(certificateAuthorityFile: certificateAuthorityFile)
    }
}
