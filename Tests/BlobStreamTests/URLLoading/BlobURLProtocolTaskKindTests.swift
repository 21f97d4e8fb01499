import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every kind of task gets the whole blob or a clear error: completion handler, `async`,
/// delegate (streamed, in several chunks), download (refused, never a trap). The 256 MiB
/// cases run one at a time: each holds the blob in memory once or twice.
@Suite(.serialized, BigAssetScope()) struct BlobURLProtocolTaskKindTests {
    static let bigSize = 256 << 20
    /// The 256 MiB asset and its bytes, written once for the suite by ``BigAssetScope``, which
    /// removes it after the suite's last test (a `static let` kept it on disk for good).
    @TaskLocal static var big: (fixture: URLAssetFixture, bytes: Data)?

    @Test func completionHandlerDataTaskGetsTheWhole256MiB() async throws {
        let big = try #require(Self.big)
        let (data, response, error) = await URLLoading.completionTask(URLLoading.session(), URLRequest(url: big.fixture.url("big.bin")))
        #expect(error == nil)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(data?.count == Self.bigSize)
        #expect(data == big.bytes)
    }

    @Test func asyncDataGetsTheWhole256MiB() async throws {
        let big = try #require(Self.big)
        let (data, response) = try await URLLoading.session().data(from: big.fixture.url("big.bin"))
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Length") == String(Self.bigSize))
        #expect(data.count == Self.bigSize)
        #expect(data == big.bytes)
    }

    @Test func delegateDataTaskStreamsTheWhole256MiBInBlocks() async throws {
        let big = try #require(Self.big)
        let delegate = RecordingDataDelegate(expected: big.bytes, keepsBytes: false)
        URLLoading.session(delegate: delegate).dataTask(with: big.fixture.url("big.bin")).resume()
        let outcome = await delegate.completion()
        #expect(outcome.error == nil)
        #expect(outcome.received == Self.bigSize)
        #expect(outcome.firstMismatch == nil)
        // Streamed (one chunk per block), not delivered whole: what keeps its memory bounded.
        #expect(outcome.chunkCount >= Self.bigSize / (4 << 20), "\(outcome.chunkCount) chunks")
    }

    /// The case FoundationNetworking routes like a completion handler although the session has
    /// a delegate: streaming here would leave only the last block.
    @Test func completionHandlerOnADelegateSessionGetsTheWholeBlob() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        let path = try fixture.add("a", size: 5 << 20)
        let delegate = RecordingDataDelegate()
        let session = URLLoading.session(delegate: delegate)
        let (data, _, error) = await URLLoading.completionTask(session, URLRequest(url: fixture.url("a")))
        #expect(error == nil)
        #expect(try data == Data(contentsOf: URL(fileURLWithPath: path)))
        let (asyncData, _) = try await session.data(from: fixture.url("a"), delegate: delegate)
        #expect(try asyncData == Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func downloadTaskWithCompletionHandlerFailsClearly() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        try fixture.add("a", size: 1000)
        let (file, error): (URL?, (any Error)?) = await withCheckedContinuation { continuation in
            URLLoading.session().downloadTask(with: fixture.url("a")) { file, _, error in
                continuation.resume(returning: (file, error))
            }.resume()
        }
        #expect(file == nil)
        let typed = try #require(error as? BlobStreamError)
        guard case .unsupportedURL(let url, let reason) = typed else { Issue.record("\(typed)"); return }
        #expect(url == fixture.url("a").absoluteString)
        #expect(reason.contains("download task"))
    }

    @Test func downloadTaskWithDelegateFailsClearlyWithoutTrapping() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        try fixture.add("a", size: 1000)
        let delegate = DownloadRecorder()
        URLLoading.session(delegate: delegate).downloadTask(with: fixture.url("a")).resume()
        let error = await delegate.completion()
        #expect(error is BlobStreamError)
        #expect(delegate.finishedFiles == 0)
    }
}

/// A download delegate that records how its task ended.
final class DownloadRecorder: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var files = 0
    private var result: (any Error)??
    private var waiter: CheckedContinuation<(any Error)?, Never>?

    var finishedFiles: Int { lock.withLock { files } }

    func completion() async -> (any Error)? {
        await withCheckedContinuation { continuation in
            let ready = lock.withLock { () -> (any Error)?? in
                if result == nil { waiter = continuation }
                return result
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        lock.withLock { files += 1 }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let waiter = lock.withLock { () -> CheckedContinuation<(any Error)?, Never>? in
            result = .some(error)
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(returning: error)
    }
}

/// Provides ``BlobURLProtocolTaskKindTests/big`` to that suite's tests, and removes it after them.
private struct BigAssetScope: SuiteTrait, TestScoping {
    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let fixture = try URLAssetFixture(scheme: "big")
        defer { fixture.remove() }
        let path = try fixture.add("big.bin", size: BlobURLProtocolTaskKindTests.bigSize, seed: 256)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try await BlobURLProtocolTaskKindTests.$big.withValue((fixture, bytes)) { try await function() }
    }
}
