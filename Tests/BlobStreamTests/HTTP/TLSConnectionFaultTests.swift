@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A TLS connection to nginx that breaks in the middle of a body, through a proxy: a reset, an
/// end without close_notify, a record that fails its integrity check. Each is a dropped
/// connection, resumed where the data stopped (byte-identical), and, when no retry is left,
/// an error that names its own cause and the offset, never a short success.
@Suite struct TLSConnectionFaultTests {
    static let cases: [(fault: FaultProxy.Fault, words: [String])] = [
        (.cut(after: 200_000, direction: .response), ["reset"]),
        (.end(after: 200_000, direction: .response), ["without close_notify"]),
        (.corrupt(after: 200_000, direction: .response), ["bad record mac"]),
    ]

    static func read(_ fault: FaultProxy.Fault, retries: Int) throws -> (StreamDrain, ServedBlob, FaultProxy) {
        try TestServers.requireTLS()
        let blob = try ServedBlob(size: 1_000_000, seed: 96)
        let proxy = try FaultProxy(targetPort: TestServers.nginxTLSPort)
        proxy.plan([fault])
        let url = proxy.url(for: try TestServers.nginxTLSURL(forFileAtPath: blob.path))
        let configuration = HTTPDataSource.Configuration(
            requestTimeout: 10, idleTimeout: 10, maxRetries: retries, retryDelay: 0.01, transport: HTTPSSourceTests.trusted)
        return (StreamHarness.drain(BlobInputStream(dataSource: HTTPDataSource(url: url, configuration: configuration))), blob, proxy)
    }

    @Test(arguments: cases.map(\.fault))
    func theBodyIsResumedByteIdentical(fault: FaultProxy.Fault) throws {
        let (drained, blob, proxy) = try Self.read(fault, retries: 3)
        defer { blob.remove(); proxy.stop() }
        #expect(drained.error == nil, "\(String(describing: drained.error))")
        #expect(drained.bytes == blob.bytes)
        #expect(proxy.statistics.connections == 2, "one reconnect")
    }

    @Test(arguments: cases)
    func withoutRetriesTheErrorNamesItsCauseAndOffset(fault: FaultProxy.Fault, words: [String]) throws {
        let (drained, blob, proxy) = try Self.read(fault, retries: 0)
        defer { blob.remove(); proxy.stop() }
        #expect(drained.bytes.count < blob.bytes.count)
        #expect(drained.bytes == Array(blob.bytes.prefix(drained.bytes.count)), "what was delivered is the blob's")
        guard case .network(let url, let reason)? = drained.error else {
            Issue.record("expected a network error, got \(String(describing: drained.error))")
            return
        }
        #expect(url.hasPrefix("https://127.0.0.1:\(proxy.port)/"))
        for word in words + ["at offset \(drained.bytes.count)"] {
            #expect(reason.contains(word), "\(reason)")
        }
    }
}
