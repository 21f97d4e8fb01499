import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// HTTP sources share the request loop and its kept-alive connections: a source
/// that read its body to the end leaves the connection to the next request to that endpoint.
@Suite struct HTTPConnectionReuseTests {
    @Test func sourcesReadingOneServerOneAfterAnotherShareAConnection() async throws {
        let blob = try ServedBlob(size: 300_000, seed: 61)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        let url = proxy.url(for: try blob.url())
        let reads = try await blocking {
            try (0..<3).map { _ in
                let source = HTTPDataSource(url: url)
                defer { source.close() }
                let reader = SourceReader(source: source)
                _ = try reader.open().get()
                return try reader.readToEnd().get()
            }
        }
        #expect(reads == [blob.bytes, blob.bytes, blob.bytes])
        #expect(proxy.statistics.connections == 1, "three whole reads over one kept-alive connection")
    }

    /// A source stopped in the middle of a body closes its connection: the next request never
    /// reads the rest of another answer.
    @Test func aSourceClosedMidBodyLeavesNoConnectionBehind() async throws {
        let blob = try ServedBlob(size: 8 << 20, seed: 62)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        let url = proxy.url(for: try blob.url())
        let (first, second) = try await blocking {
            let partial = HTTPDataSource(url: url, configuration: .init(readAheadLimit: 64 * 1024))
            let reader = SourceReader(source: partial)
            _ = try reader.open().get()
            var head = [UInt8](repeating: 0, count: 1000)
            guard case .read(let count) = try reader.read(at: 0, into: &head) else { throw TestSupportError("no bytes") }
            head.removeSubrange(count...)
            partial.close()
            let source = HTTPDataSource(url: url)
            defer { source.close() }
            let whole = SourceReader(source: source)
            _ = try whole.open().get()
            return (head, try whole.readToEnd().get())
        }
        #expect(!first.isEmpty && first == Array(blob.bytes[0..<first.count]))
        #expect(second == blob.bytes)
        #expect(proxy.statistics.connections == 2)
    }
}
