import BlobStream
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A bare protocol that answers with five `didLoad` chunks, to observe FoundationNetworking
/// itself rather than ``BlobURLProtocol``.
private final class FiveChunkProtocol: URLProtocol {
    static let scheme = "blob-fact-chunks"
    static let chunks = (0..<5).map { Data("chunk\($0) ".utf8) }

    override class func canInit(with request: URLRequest) -> Bool { request.url?.scheme == scheme }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() {
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil)!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        for chunk in Self.chunks { client?.urlProtocol(self, didLoad: chunk) }
        client?.urlProtocolDidFinishLoading(self)
    }
    override func stopLoading() {}
}

/// Pins the FoundationNetworking behaviour that ``BlobURLProtocol``'s design rests on (see
/// `BodyDelivery`). If one of these fails, Foundation changed: revisit that choice, and the
/// README's Linux notes.
@Suite struct URLLoadingFoundationFactTests {
    private let url = URL(string: "\(FiveChunkProtocol.scheme)://x")!

    private func session(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [FiveChunkProtocol.self]
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    #if canImport(FoundationNetworking)
    @Test func completionHandlerKeepsOnlyTheLastChunk() async {
        let (data, _, error) = await URLLoading.completionTask(session(), URLRequest(url: url))
        #expect(error == nil)
        #expect(data == FiveChunkProtocol.chunks.last)
    }

    @Test func asyncDataKeepsOnlyTheLastChunk() async throws {
        let (data, _) = try await session().data(from: url)
        #expect(data == FiveChunkProtocol.chunks.last)
    }

    @Test func completionHandlerOnADelegateSessionKeepsOnlyTheLastChunk() async {
        let delegate = RecordingDataDelegate()
        let (data, _, _) = await URLLoading.completionTask(session(delegate: delegate), URLRequest(url: url))
        #expect(data == FiveChunkProtocol.chunks.last)
        #expect(delegate.outcome.chunkCount == 0, "a completion-handler task's chunks do not reach the session delegate")
    }

    /// Linux's URLSession asks protocol classes only `canInit(with: URLRequest)`, so a class
    /// cannot refuse a kind of task there; `BlobURLProtocol.startLoading` has to.
    @Test func canInitWithTaskIsNotConsulted() async {
        let delegate = RecordingDataDelegate()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [RefusingEveryTaskProtocol.self]
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        session.dataTask(with: URL(string: "\(RefusingEveryTaskProtocol.scheme)://x")!).resume()
        let outcome = await delegate.completion()
        #expect(outcome.error == nil)
        #expect(outcome.bytes == Data("served".utf8))
    }
    #endif

    @Test func delegateDataTaskGetsEveryChunkInOrder() async {
        let delegate = RecordingDataDelegate()
        session(delegate: delegate).dataTask(with: url).resume()
        let outcome = await delegate.completion()
        #expect(outcome.error == nil)
        #expect(outcome.bytes == Data(FiveChunkProtocol.chunks.joined()))
        #expect(outcome.chunkCount == 5)
    }

    /// `URLProtocol.registerClass` is enough for `URLSession.shared`.
    @Test func registerClassServesTheSharedSession() async throws {
        let fixture = try URLAssetFixture(scheme: "shared-t")
        defer { fixture.remove() }
        try fixture.add("a", size: 100_000)
        #expect(URLProtocol.registerClass(BlobURLProtocol.self))
        defer { URLProtocol.unregisterClass(BlobURLProtocol.self) }
        let (data, response) = try await URLSession.shared.data(from: fixture.url("a"))
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try data == Data(contentsOf: URL(fileURLWithPath: fixture.store.path(of: "a"))))
    }
}

/// Says no to every task and yes to every request of its scheme.
private final class RefusingEveryTaskProtocol: URLProtocol {
    static let scheme = "blob-fact-refuse"
    override class func canInit(with request: URLRequest) -> Bool { request.url?.scheme == scheme }
    override class func canInit(with task: URLSessionTask) -> Bool { false }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() {
        let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil)!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Data("served".utf8))
        client?.urlProtocolDidFinishLoading(self)
    }
    override func stopLoading() {}
}
