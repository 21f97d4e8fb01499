@testable import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// `HTTPDataSource.Configuration.retryObserver` hears of every reconnect before its wait, and
/// `blobstream cat` prints them: a source that stalls is not minutes of silence.
@Suite struct HTTPRetryObserverTests {
    @Test func everyReconnectIsToldWithItsCauseAndAttempt() async throws {
        let blob = try ServedBlob(size: 1_000_000, seed: 97)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.cutAfter(bytes: [100_000, 200_000])
        let url = proxy.url(for: try blob.url())
        let heard = LockedValue<[HTTPDataSource.Retry]>([])
        var chosen = HTTPDataSource.Configuration(maxRetries: 4, retryDelay: 0.01)
        chosen.retryObserver = { retry in heard.withLock { $0.append(retry) } }
        let configuration = chosen
        let bytes = try await blocking {
            let source = HTTPDataSource(url: url, configuration: configuration)
            defer { source.close() }
            let reader = SourceReader(source: source)
            _ = try reader.open().get()
            return try reader.readToEnd().get()
        }
        #expect(bytes == blob.bytes)
        let notices = heard.withLock { $0 }
        #expect(notices.count == 2, "\(notices)")
        for notice in notices {
            // Progress between the cuts starts the count again: each is a first retry.
            #expect(notice.attempt == 2 && notice.attempts == 5 && notice.delay == 0.01, "\(notice)")
            guard case .network(let failedURL, let reason) = notice.error else {
                Issue.record("\(notice.error)")
                continue
            }
            #expect(failedURL == url.absoluteString)
            #expect(reason.contains("at offset"), "\(reason)")
        }
    }

    @Test func catPrintsItsRetries() async throws {
        let blob = try ServedBlob(size: 300_000, seed: 98)
        defer { blob.remove() }
        let proxy = try FaultProxy(targetPort: TestServers.nginxPort)
        defer { proxy.stop() }
        proxy.cutAfter(bytes: [100_000])
        let url = proxy.url(for: try blob.url())
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["checksum", url.absoluteString])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "\(try TempFiles.sha256(of: Data(blob.bytes)))  \(url.absoluteString)\n")
        #expect(result.standardError.hasPrefix("blobstream checksum: retry 1 of 5 in 0.1 s after: \(url.absoluteString)"),
                "\(result.standardError)")
    }
}
