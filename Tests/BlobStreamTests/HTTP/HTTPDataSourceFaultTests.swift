@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Connections cut by a proxy between the source and nginx: the source reconnects where the
/// data stopped and the output is byte-identical, unless the blob changed meanwhile.
@Suite struct HTTPDataSourceFaultTests {
    static let transports: [HTTPDataSource.Transport] = [.automatic, .urlSession]

    @Test(arguments: transports)
    func connectionsCutAtRandomByteCountsAreResumed(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 6 * 1024 * 1024, seed: 41)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        var generator = SystemRandomNumberGenerator()
        // One cut inside the response head, the others anywhere in a body. Together the body
        // cuts stay under the blob's 6 MiB, so every planned cut is reached (with cuts of up to
        // 1.5 MB, one run in a few hundred finished the blob before its last cut).
        let cuts = [Int.random(in: 20..<150, using: &generator)]
            + (0..<5).map { _ in Int.random(in: 1_000..<1_200_000, using: &generator) }
        proxy.cutAfter(bytes: cuts)
        let url = proxy.url(for: try blob.url())
        let (bytes, statistics) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 1 << 20, retryDelay: 0.01, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return (try reader.readToEnd().get(), source.statistics)
        }
        #expect(bytes == blob.bytes, "byte-identical after cuts at \(cuts)")
        #expect(proxy.statistics.cuts == cuts.count, "every planned cut happened")
        #expect(statistics.reconnects == cuts.count)
    }

    @Test(arguments: transports)
    func blobReplacedMidStreamFailsWithoutMixingVersions(transport: HTTPDataSource.Transport) async throws {
        let blob = try ServedBlob(size: 4 * 1024 * 1024, seed: 42)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        // The first connection breaks after about 300 KB; by the reconnect the blob is new.
        proxy.cutAfter(bytes: [300_000])
        let url = proxy.url(for: try blob.url())
        let (delivered, outcome) = try await blocking {
            let source = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 64 * 1024, retryDelay: 0.3, transport: transport))
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            try blob.replace(with: TempFiles.pseudoRandomBytes(count: 4 * 1024 * 1024, seed: 43))
            return try reader.readUntilStopped()
        }
        guard case .failed(.sourceChanged(let resource, let offset, let reason)) = outcome else {
            Issue.record("expected sourceChanged, got \(outcome) after \(delivered.count) bytes")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(offset == Int64(delivered.count))
        #expect(reason.contains("version"))
        #expect(delivered.count > 0 && delivered.count < 300_000)
        #expect(delivered == Array(blob.bytes[0..<delivered.count]), "every byte delivered is of the first version")
    }
}
