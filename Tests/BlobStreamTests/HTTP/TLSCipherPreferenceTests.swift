import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// What the package's TLS client negotiates with nginx, which takes the client's order: TLS 1.3
/// where offered, TLS 1.2 with a server that predates it, and AES-128-GCM first in both (README,
/// "HTTPS"). nginx reports the connection's protocol and cipher itself.
@Suite struct TLSCipherPreferenceTests {
    static func negotiated(port: UInt16) throws -> String {
        let configuration = HTTPDataSource.Configuration(
            requestTimeout: 10, idleTimeout: 10, maxRetries: 1, retryDelay: 0.01,
            transport: Transport.automatic.trusting(.certificateAuthorities(file: TestServers.tlsCAPath)))
        let source = HTTPDataSource(url: TestServers.tlsSessionURL(port: port), configuration: configuration)
        let bytes = try StreamHarness.readAll(BlobInputStream(dataSource: source))
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func tls13PrefersAES128GCM() throws {
        try TestServers.requireTLS()
        #expect(try Self.negotiated(port: TestServers.nginxTLSPort) == "TLSv1.3 TLS_AES_128_GCM_SHA256")
    }

    @Test func aTLS12OnlyServerIsReadWithECDHEAndAES128GCM() throws {
        try TestServers.requireTLS()
        #expect(try Self.negotiated(port: TestServers.tls12Port) == "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256")
    }
}
