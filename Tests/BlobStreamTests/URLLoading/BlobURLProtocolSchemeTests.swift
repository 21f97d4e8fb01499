import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
import SystemCalls
#endif

/// A source that generates its bytes (byte `i` is `i * 31 + 7`), like the README's example of
/// a user-defined scheme.
final class GeneratedDataSource: BlobDataSource {
    let resourceName: String
    let length: Int64

    init(url: URL, length: Int64) {
        self.resourceName = url.absoluteString
        self.length = length
    }

    static func byte(at offset: Int64) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 31 &+ 7) }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: length, version: "generated-\(length)", mediaType: "application/x-generated")))
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let count = Int(min(Int64(buffer.count), length - offset))
        guard count > 0 else { return .end }
        for index in 0..<count { buffer[index] = Self.byte(at: offset + Int64(index)) }
        return .read(count)
    }

    func close() {}
}

/// User-defined schemes work at once; `http`/`https` stay with URLSession; many tasks share a
/// session without a thread each.
@Suite struct BlobURLProtocolSchemeTests {
    @Test func userDefinedSchemeWorksEndToEnd() async throws {
        let scheme = URLLoading.uniqueScheme("map")
        let url = URL(string: "\(scheme)://tiles/7")!
        #expect(!BlobURLProtocol.canInit(with: URLRequest(url: url)))
        BlobURLRegistry.shared.register(scheme: scheme) { url in GeneratedDataSource(url: url, length: 1_000_003) }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        #expect(BlobURLProtocol.canInit(with: URLRequest(url: url)))
        let (data, response) = try await URLLoading.session().data(from: url)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/x-generated")
        #expect(http.mimeType == "application/x-generated")
        #expect(http.value(forHTTPHeaderField: "ETag") == "\"generated-1000003\"")
        #expect(data == Data((0..<1_000_003).map { GeneratedDataSource.byte(at: Int64($0)) }))
    }

    @Test func httpAndHTTPSStayWithURLSession() {
        #expect(BlobURLRegistry.shared.schemes.contains("http"))
        #expect(!BlobURLProtocol.canInit(with: URLRequest(url: URL(string: "http://127.0.0.1/x")!)))
        #expect(!BlobURLProtocol.canInit(with: URLRequest(url: URL(string: "HTTPS://example.com/x")!)))
        #expect(BlobURLProtocol.canInit(with: URLRequest(url: URL(fileURLWithPath: "/etc/hostname"))))
    }

    @Test func responsesAreNotStoredInURLCache() async throws {
        let fixture = try URLAssetFixture()
        defer { fixture.remove() }
        try fixture.add("small", size: 4096)
        let cache = URLCache(memoryCapacity: 16 << 20, diskCapacity: 0, diskPath: nil)
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = cache
        configuration.requestCachePolicy = .returnCacheDataElseLoad
        BlobURLProtocol.install(into: configuration)
        let session = URLSession(configuration: configuration)
        let request = URLRequest(url: fixture.url("small"))
        let (data, response) = try await session.data(for: request)
        #expect(data.count == 4096)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control") == "no-store")
        #expect(cache.cachedResponse(for: request) == nil)
    }

    @Test func installPutsTheProtocolFirstOnce() {
        let configuration = URLSessionConfiguration.ephemeral
        BlobURLProtocol.install(into: configuration)
        BlobURLProtocol.install(into: configuration)
        let classes = configuration.protocolClasses ?? []
        #expect(classes.first == BlobURLProtocol.self)
        #expect(classes.filter { $0 == BlobURLProtocol.self }.count == 1)
        #expect(classes.count > 1, "URLSession's own protocols stay")
    }

    /// FoundationNetworking's client reads the session's task registry unlocked: a client call
    /// from another queue than the task's work queue races with other tasks of the session
    /// being added and removed (a crash in `URLSession.behaviour(for:)`). Many short tasks on
    /// one session make that race likely.
    @Test func manyShortTasksOnOneSessionAllComplete() async throws {
        let scheme = URLLoading.uniqueScheme("short")
        BlobURLRegistry.shared.register(scheme: scheme) { url in GeneratedDataSource(url: url, length: 3000) }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let expected = Data((0..<3000).map { GeneratedDataSource.byte(at: Int64($0)) })
        let session = URLLoading.session()
        for _ in 0..<4 {
            let good = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<250 {
                    group.addTask {
                        let url = URL(string: "\(scheme)://blob/\(index)")!
                        let (data, _, error) = await URLLoading.completionTask(session, URLRequest(url: url))
                        return error == nil && data == expected
                    }
                }
                var good = 0
                for await result in group where result { good += 1 }
                return good
            }
            #expect(good == 250)
        }
    }

    /// All 64 tasks are held at once with their sources waiting for bytes; a design with a
    /// thread per request would have 64 more threads then. A first round of 64 tasks that are
    /// not held lets URLSession and the dispatch pools grow their threads before the count is
    /// taken, and the count is the smallest of several samples, so threads that come and go
    /// (other tests running alongside) do not decide.
    @Test func sixtyFourConcurrentTasksAreByteIdenticalWithoutAThreadEach() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: (1 << 20) + 17, seed: 64)
        let expected = Data(bytes)
        let stall = StallGate()
        let scheme = URLLoading.uniqueScheme("many")
        BlobURLRegistry.shared.register(scheme: scheme) { _ in
            let source = ProbeDataSource(bytes: bytes, preferredBlockSize: 256 << 10)
            source.onRead { _, wake in stall.hold(wake) }
            return source
        }
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let session = URLLoading.session()
        stall.release()
        let warmUp = await fetchAll(64, of: scheme, in: session, expecting: expected)
        #expect(warmUp.filter { !$0 }.isEmpty)
        stall.hold()
        let baseline = URLLoading.threadCount()
        async let results = fetchAll(64, of: scheme, in: session, expecting: expected)
        while stall.heldCount < 64 { try await Task.sleep(for: .milliseconds(5)) }
        var fewest = Int.max
        for _ in 0..<10 {
            fewest = min(fewest, URLLoading.threadCount())
            try await Task.sleep(for: .milliseconds(10))
        }
        stall.release()
        let all = await results
        #expect(all.count == 64)
        #expect(all.filter { !$0 }.isEmpty)
        #expect(fewest - baseline < 64, "\(baseline) threads before, \(fewest) with 64 tasks waiting")
    }

    /// Loads `count` URLs of `scheme` at once, alternately with a completion handler and
    /// `data(from:)`; whether each got `expected`.
    private func fetchAll(_ count: Int, of scheme: String, in session: URLSession, expecting expected: Data) async -> [Bool] {
        await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask {
                    let url = URL(string: "\(scheme)://blob/\(index)")!
                    if index % 2 == 0 {
                        let (data, _, error) = await URLLoading.completionTask(session, URLRequest(url: url))
                        return error == nil && data == expected
                    }
                    return (try? await session.data(from: url).0) == expected
                }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
    }
}

/// Holds every first read of the sources that ask it, until ``release()``.
private final class StallGate: Sendable {
    private let state = LockedValue<(released: Bool, held: [@Sendable () -> Void])>((false, []))

    var heldCount: Int { state.withLock { $0.held.count } }

    func hold(_ wake: @escaping @Sendable () -> Void) -> ProbeDataSource.ReadDecision {
        state.withLock { state in
            if state.released { return .serve }
            state.held.append(wake)
            return .answer(.wouldBlock)
        }
    }

    func release() {
        let held = state.withLock { state in
            state.released = true
            defer { state.held.removeAll() }
            return state.held
        }
        for wake in held { wake() }
    }

    /// Holds first reads again from now on.
    func hold() {
        state.withLock { $0.released = false }
    }
}
