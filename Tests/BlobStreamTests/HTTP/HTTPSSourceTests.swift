import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The HTTP source over `https:` on the package's own client, against nginx with certificates
/// from the test CA (``TestServers/tlsCAPath``): byte-identical reads, and every peer that
/// cannot be trusted refused before a request byte is sent, naming the URL and the reason.
@Suite struct HTTPSSourceTests {
    static let trusted = Transport.automatic.trusting(.certificateAuthorities(file: TestServers.tlsCAPath))

    static func configuration(_ transport: Transport = trusted) -> HTTPDataSource.Configuration {
        HTTPDataSource.Configuration(requestTimeout: 10, idleTimeout: 10, maxRetries: 1, retryDelay: 0.01, transport: transport)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func readsABlobByteIdenticalOverTLS(mode: BlobInputStream.Mode) throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 3 * 1024 * 1024 + 11, seed: 91)
        defer { blob.remove() }
        let url = try TestServers.nginxTLSURL(forFileAtPath: blob.path)
        let stream = BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration()), mode: mode)
        let read = try StreamHarness.readAll(stream)
        #expect(read.count == blob.bytes.count)
        #expect(read == blob.bytes)
    }

    @Test func resumesAfterASeekAndReadsChunkedAndUnrangedRoutes() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 1_000_003, seed: 92)
        defer { blob.remove() }
        for route in [TestServers.Route.plain, .chunked, .noRange] {
            let url = try TestServers.nginxTLSURL(forFileAtPath: blob.path, route: route)
            let stream = BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration()))
            try stream.seek(to: 500_000)
            let read = try StreamHarness.readAll(stream)
            #expect(read == Array(blob.bytes[500_000...]), "route \(route)")
        }
    }

    @Test(arguments: TestServers.UntrustedTLSPeer.allCases)
    func anUntrustedPeerIsRefusedWithItsReason(peer: TestServers.UntrustedTLSPeer) throws {
        try TestServers.requireTLS()
        let url = peer.url.appendingPathComponent("health-blob.bin")
        let stream = BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration()))
        let drained = StreamHarness.drain(stream)
        #expect(drained.bytes.isEmpty)
        let expected: String = switch peer {
        case .wrongName: "IP address mismatch"
        case .selfSigned: "self-signed certificate"
        case .expired: "certificate has expired"
        case .legacyProtocol: "protocol"
        }
        guard case .sourceFailed(let resource, let reason)? = drained.error else {
            Issue.record("expected a refused secure connection, got \(String(describing: drained.error))")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(reason.contains("a secure connection failed"), "\(reason)")
        #expect(reason.contains(expected), "\(reason)")
    }

    @Test func aHostNameIsVerifiedAndSentAsSNI() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 70_000, seed: 94)
        defer { blob.remove() }
        var good = URLComponents(url: try TestServers.nginxTLSURL(forFileAtPath: blob.path), resolvingAgainstBaseURL: false)!
        good.host = "localhost"
        #expect(try StreamHarness.readAll(BlobInputStream(dataSource: HTTPDataSource(url: good.url!, configuration: Self.configuration()))) == blob.bytes)
        var wrong = good
        wrong.port = Int(TestServers.UntrustedTLSPeer.wrongName.port)
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: wrong.url!, configuration: Self.configuration())))
        #expect(drained.bytes.isEmpty)
        #expect(drained.error?.description.contains("hostname mismatch") == true, "\(String(describing: drained.error))")
    }

    /// A fully qualified name (`localhost.`) is verified and sent as SNI without its dot, as
    /// curl does, and still verified: a name under it that the certificate lacks is refused.
    @Test func aHostNameWithATrailingDotIsVerifiedWithoutIt() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 5000, seed: 97)
        defer { blob.remove() }
        var url = URLComponents(url: try TestServers.nginxTLSURL(forFileAtPath: blob.path), resolvingAgainstBaseURL: false)!
        for host in ["localhost.", "bucket.s3.localhost."] {
            url.host = host
            #expect(try StreamHarness.readAll(BlobInputStream(dataSource: HTTPDataSource(url: url.url!, configuration: Self.configuration()))) == blob.bytes, "\(host)")
        }
        url.host = "other.localhost."
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url.url!, configuration: Self.configuration())))
        #expect(drained.bytes.isEmpty)
        #expect(drained.error?.description.contains("hostname mismatch: it is not for other.localhost") == true, "\(String(describing: drained.error))")
    }

    @Test func aRedirectFromHTTPSToHTTPIsNotFollowed() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 1000, seed: 95)
        defer { blob.remove() }
        let plain = try blob.url()
        let url = TestServers.nginxTLSURL.appendingPathComponent("redirect-to-plain" + plain.path)
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration())))
        #expect(drained.bytes.isEmpty)
        guard case .unsupportedURL(let target, let reason)? = drained.error else {
            Issue.record("expected the redirect to be refused, got \(String(describing: drained.error))")
            return
        }
        #expect(target == plain.absoluteString)
        #expect(reason.contains("from https to http"), "\(reason)")
    }

    @Test func theSystemStoreDoesNotTrustTheTestCA() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 1000, seed: 93)
        defer { blob.remove() }
        let url = try TestServers.nginxTLSURL(forFileAtPath: blob.path)
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration(.automatic))))
        #expect(drained.bytes.isEmpty)
        #expect(drained.error?.description.contains("unable to get local issuer certificate") == true, "\(String(describing: drained.error))")
    }

    /// A connection kept alive after a read that trusted the test CA never carries a read that
    /// trusts the system's store: the pool is keyed by trust too, so the second read makes its
    /// own connection, and its verification refuses the server.
    @Test func aPooledConnectionNeverCarriesARequestOfAnotherTrust() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 1000, seed: 94)
        defer { blob.remove() }
        let url = try TestServers.nginxTLSURL(forFileAtPath: blob.path)
        let trusted = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration(Self.trusted))))
        #expect(trusted.bytes == blob.bytes, "\(String(describing: trusted.error))")
        let untrusted = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration(.automatic))))
        #expect(untrusted.bytes.isEmpty)
        #expect(untrusted.error?.description.contains("unable to get local issuer certificate") == true, "\(String(describing: untrusted.error))")
    }

    /// A connection reset in the middle of the TLS handshake (the server's hello cut short) is
    /// a dropped connection, retried like one after the handshake; only a refusal by the peer
    /// (a certificate, a protocol version) is final.
    @Test func aResetDuringTheHandshakeIsRetried() throws {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 50_000, seed: 95)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxTLSPort)
        defer { proxy.stop() }
        proxy.cutAfter(bytes: [40])
        let url = proxy.url(for: try TestServers.nginxTLSURL(forFileAtPath: blob.path))
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration())))
        #expect(drained.bytes == blob.bytes, "\(String(describing: drained.error))")
        #expect(proxy.statistics.cuts == 1)
        #expect(proxy.statistics.connections == 2)
    }

    @Test func aMissingCAFileIsAClearError() throws {
        try TestServers.requireTLS()
        let url = TestServers.nginxTLSURL.appendingPathComponent("x.bin")
        let transport = Transport.automatic.trusting(.certificateAuthorities(file: "/nonexistent/ca.pem"))
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: Self.configuration(transport))))
        #expect(drained.error?.description.contains("cannot load the CA certificates of /nonexistent/ca.pem") == true, "\(String(describing: drained.error))")
    }

    @Test func aBodyCutShortOverTLSIsAnErrorAtItsOffset() throws {
        try TestServers.requireTLS()
        // The stall server sends 100,000 of 200,000 bytes, nginx passes them on over TLS, and
        // the client's idle time-out ends the wait: never a short success.
        let url = TestServers.nginxTLSURL.appendingPathComponent("stall/after/100000/200000")
        let configuration = HTTPDataSource.Configuration(requestTimeout: 5, idleTimeout: 1, maxRetries: 0, retryDelay: 0.01, transport: Self.trusted)
        let drained = StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: configuration)))
        #expect(drained.bytes.count <= 100_000)
        #expect(drained.error != nil)
        #expect(drained.error?.description.contains("at offset 100000") == true, "\(String(describing: drained.error))")
    }
}
