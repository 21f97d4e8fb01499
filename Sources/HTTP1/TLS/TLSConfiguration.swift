import Foundation
#if canImport(CBlobStreamTLS)
internal import CBlobStreamTLS
internal import SystemCalls
#endif

/// How the package's own client secures an `https:` connection: which certificate authorities
/// it trusts. Verification itself is not configurable: the chain and the host name (or IP
/// address) are always checked, TLS 1.2 is the least version, and ALPN offers `http/1.1`.
package struct TLSConfiguration: Sendable, Hashable {
    /// A PEM file of the only certificate authorities to trust (curl's `--cacert`), or `nil`
    /// for the system's store, which honours `SSL_CERT_FILE` and `SSL_CERT_DIR` as curl and
    /// Python do.
    package var certificateAuthorityFile: String?

    /// Trusts `certificateAuthorityFile`, or the system's store when it is `nil`.
    package init(certificateAuthorityFile: String? = nil) {
        self.certificateAuthorityFile = certificateAuthorityFile
    }

    /// Loads the trust store now (once per configuration, as a first connection would), so a
    /// command line can refuse a CA file that holds no certificate before anything is sent.
    /// - Throws: ``HTTP1Error/network(reason:cause:)`` saying why the store cannot be loaded.
    package func check() throws(HTTP1Error) {
        #if canImport(CBlobStreamTLS) && os(Linux)
        _ = try TLSContext.context(for: self)
        #endif
    }

    /// Whether this build can speak TLS itself (Linux, with OpenSSL); elsewhere `https:` goes
    /// through URLSession.
    package static var isAvailable: Bool {
        #if canImport(CBlobStreamTLS) && os(Linux)
        return true
        #else
        return false
        #endif
    }
}

#if canImport(CBlobStreamTLS) && os(Linux)
/// One OpenSSL client context per configuration, made once: loading a trust store costs
/// milliseconds, and a context serves any number of sessions on any thread.
final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer

    private init(pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        bs_tls_context_free(pointer)
    }

    private static let made = LockedValue<[TLSConfiguration: TLSContext]>([:])

    /// The context of `configuration`, made on first use.
    /// - Throws: ``HTTP1Error/network(reason:cause:)`` (``HTTP1Error/NetworkCause/secureConnectionFailed``)
    ///   when the trust store cannot be loaded (a missing or malformed CA file).
    static func context(for configuration: TLSConfiguration) throws(HTTP1Error) -> TLSContext {
        if let context = made.withLock({ $0[configuration] }) { return context }
        if configuration.certificateAuthorityFile == nil, let problem = unreadableStoreVariable() {
            throw .network(reason: problem, cause: .secureConnectionFailed)
        }
        var error = [CChar](repeating: 0, count: 512)
        let created: OpaquePointer? = configuration.certificateAuthorityFile.withOptionalCString { file in
            bs_tls_context_create(file, &error, error.count)
        }
        guard let created else {
            throw .network(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), cause: .secureConnectionFailed)
        }
        let context = TLSContext(pointer: created)
        return made.withLock { contexts in
            if let existing = contexts[configuration] { return existing }
            contexts[configuration] = context
            return context
        }
    }
}

extension TLSContext {
    /// Why `SSL_CERT_FILE` and `SSL_CERT_DIR` name no trust store, if they name paths and none
    /// can be used (a file that cannot be read or holds no PEM certificate, a directory that
    /// cannot be read): OpenSSL passes over such paths (trusting the others), and with none
    /// left every certificate would be refused as "unable to get local issuer certificate",
    /// which hides the cause.
    static func unreadableStoreVariable() -> String? {
        let environment = ProcessInfo.processInfo.environment
        var named: [(variable: String, path: String)] = []
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            guard let value = environment[variable], !value.isEmpty else { continue }
            // SSL_CERT_DIR may list directories, as OpenSSL reads it.
            let paths = variable == "SSL_CERT_DIR" ? value.split(separator: ":").map(String.init) : [value]
            named += paths.map { (variable, $0) }
        }
        var first: (variable: String, path: String, reason: String)?
        for (variable, path) in named {
            guard access(path, R_OK) == 0 else {
                first = first ?? (variable, path, "it cannot be read: \(String(cString: strerror(errno)))")
                continue
            }
            guard variable == "SSL_CERT_FILE", !Self.holdsCertificate(path) else { return nil }
            first = first ?? (variable, path, "it holds no PEM certificate")
        }
        guard let first else { return nil }
        return "\(first.variable) names \(first.path), but \(first.reason), and no other trust store is named: "
            + "point it at your CA certificates, or unset it to trust the system's store"
    }

    /// Whether the file at `path` holds a PEM certificate, as OpenSSL's bundles do.
    private static func holdsCertificate(_ path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .isoLatin1) else { return false }
        return text.contains("-----BEGIN CERTIFICATE-----") || text.contains("-----BEGIN TRUSTED CERTIFICATE-----")
    }
}

extension Optional where Wrapped == String {
    /// Calls `body` with a C string of the value, or `nil`.
    func withOptionalCString<T>(_ body: (UnsafePointer<CChar>?) -> T) -> T {
        switch self {
        case .some(let string): string.withCString { body($0) }
        case .none: body(nil)
        }
    }
}
#endif
