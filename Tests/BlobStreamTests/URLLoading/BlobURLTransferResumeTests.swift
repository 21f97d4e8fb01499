@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLProtocolClient` that records the calls it gets, in order.
private final class RecordingClient: NSObject, URLProtocolClient, @unchecked Sendable {
    enum Call: Equatable {
        case response(Int)
        case load(Int)
        case finish
        case fail
    }

    private let lock = NSLock()
    private var log: [Call] = []
    var calls: [Call] { lock.withLock { log } }
    private func record(_ call: Call) { lock.withLock { log.append(call) } }

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {}
    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {}
    func urlProtocol(_ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy) {
        record(.response((response as? HTTPURLResponse)?.statusCode ?? -1))
    }
    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) { record(.load(data.count)) }
    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) { record(.finish) }
    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) { record(.fail) }
    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {}
    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {}
}

/// ``BlobURLTransfer`` driven directly, with a client queue the test holds, so the order of
/// `stopLoading` (FoundationNetworking's `suspend()`) against queued client calls is chosen,
/// not raced.
@Suite struct BlobURLTransferResumeTests {
    /// Waits (without a deadline to assert on) until `condition` holds, or records that it never did.
    private func wait(_ what: String, until condition: () -> Bool) async {
        for _ in 0..<2_000 where !condition() { try? await Task.sleep(nanoseconds: 5_000_000) }
        if !condition() { Issue.record("never happened: \(what)") }
    }

    /// A suspend whose `stopLoading` runs before the queued response call: that call is
    /// dropped, so the resumed transfer must send the response itself, before any body or end.
    @Test(arguments: [false, true])
    func responseDroppedBySuspendIsSentByTheResumedTransfer(streamed: Bool) async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 21)
        let source = ProbeDataSource(bytes: bytes, preferredBlockSize: 16 << 10)
        let client = RecordingClient()
        let url = URL(string: "x-resume://blob")!
        let owner = URLProtocol(request: URLRequest(url: url), cachedResponse: nil, client: client)
        let clientQueue = DispatchQueue(label: "client")
        let queue = DispatchQueue(label: "transfer")
        let delivery: BodyDelivery = streamed ? .streamed(OperationQueue()) : .whole
        clientQueue.suspend()

        let gate = ProtocolClientGate(owner: owner, clientQueue: clientQueue)
        let first = BlobURLTransfer(
            request: URLRequest(url: url), source: source, delivery: delivery, gate: gate, queue: queue, resuming: nil)
        first.start()
        // The transfer has planned and queued its response once it reads the body.
        await wait("the first read") { !source.reads.isEmpty }
        // stopLoading, queued on the client queue before the response call runs.
        gate.close()
        first.stop()
        let point = queue.sync { first.resumePoint() }

        let secondGate = ProtocolClientGate(owner: owner, clientQueue: clientQueue)
        let second = BlobURLTransfer(
            request: URLRequest(url: url), source: source, delivery: delivery, gate: secondGate, queue: queue, resuming: point)
        second.start()
        clientQueue.resume()
        await wait("the end of the resumed transfer") {
            client.calls.contains(.finish) || client.calls.contains(.fail)
        }
        let calls = client.calls
        #expect(calls.first == .response(200), "\(calls)")
        #expect(calls.last == .finish, "\(calls)")
        let loaded = calls.reduce(0) { if case .load(let count) = $1 { $0 + count } else { $0 } }
        #expect(loaded == bytes.count, "\(calls)")
    }
}
