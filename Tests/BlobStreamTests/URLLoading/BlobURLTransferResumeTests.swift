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
    /// Runs on the client queue after each `didLoad`, inside that client call.
    var onLoad: (@Sendable () -> Void)?
    var calls: [Call] { lock.withLock { log } }
    private var failure: BlobStreamError?
    /// The error of the last `didFailWithError`, when it was a `BlobStreamError`.
    var error: BlobStreamError? { lock.withLock { failure } }
    private func record(_ call: Call) { lock.withLock { log.append(call) } }

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {}
    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {}
    func urlProtocol(_ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy) {
        record(.response((response as? HTTPURLResponse)?.statusCode ?? -1))
    }
    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        record(.load(data.count))
        onLoad?()
    }
    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) { record(.finish) }
    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) {
        lock.withLock { failure = error as? BlobStreamError }
        record(.fail)
    }
    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {}
    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {}
}

/// ``BlobURLTransfer`` driven directly, with a client queue the test holds, so the order of
/// `stopLoading` (FoundationNetworking's `suspend()`) against queued client calls and returned
/// credits is chosen, not raced.
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
    /// A stopped transfer is inert: a credit returned after `stop()` (the delegate queue took
    /// a block) must not read the closed stream and end the task with a failure.
    @Test func creditReturnedAfterStopMakesNoClientCall() async throws {
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: 4 << 20, seed: 22), preferredBlockSize: 64 << 10)
        let client = RecordingClient()
        let url = URL(string: "x-stop://blob")!
        let owner = URLProtocol(request: URLRequest(url: url), cachedResponse: nil, client: client)
        let clientQueue = DispatchQueue(label: "client")
        let queue = DispatchQueue(label: "transfer")
        let delegateQueue = OperationQueue()
        delegateQueue.maxConcurrentOperationCount = 1
        delegateQueue.isSuspended = true  // credits come back only when the test lets them
        // The gate stays open: whatever the transfer sends after stop() reaches the client.
        let gate = ProtocolClientGate(owner: owner, clientQueue: clientQueue)
        let transfer = BlobURLTransfer(
            request: URLRequest(url: url), source: source, delivery: .streamed(delegateQueue), gate: gate, queue: queue, resuming: nil)
        transfer.start()
        await wait("a window of blocks delivered") {
            client.calls.filter { if case .load = $0 { true } else { false } }.count == BlobURLTransfer.window
        }
        for _ in 0..<10 { queue.sync {} }  // the next `.hasBytesAvailable` finds no credit
        transfer.stop()
        let before = client.calls
        delegateQueue.isSuspended = false
        // Serial: once this runs, every credit operation queued before it has run.
        await withCheckedContinuation { continuation in delegateQueue.addOperation { continuation.resume() } }
        queue.sync {}
        clientQueue.sync {}
        #expect(client.calls == before, "after stop(): \(client.calls.dropFirst(before.count))")
    }

    /// A `stopLoading` right after the whole body's `didLoad` must not leave the task without
    /// its finish (and a resumed transfer sending the whole body again): body and finish are
    /// one client-queue block.
    @Test func stopBetweenWholeBodyAndFinishDoesNotRepeatTheBody() async throws {
        let bytes = TempFiles.pseudoRandomBytes(count: 100_000, seed: 23)
        let source = ProbeDataSource(bytes: bytes, preferredBlockSize: 16 << 10)
        let client = RecordingClient()
        let url = URL(string: "x-finish://blob")!
        let owner = URLProtocol(request: URLRequest(url: url), cachedResponse: nil, client: client)
        let clientQueue = DispatchQueue(label: "client")
        let queue = DispatchQueue(label: "transfer")
        // Holds the client queue after the block that delivers the body: whatever that block
        // did not send waits behind the stopLoading below.
        client.onLoad = { clientQueue.suspend() }
        let gate = ProtocolClientGate(owner: owner, clientQueue: clientQueue)
        let first = BlobURLTransfer(
            request: URLRequest(url: url), source: source, delivery: .whole, gate: gate, queue: queue, resuming: nil)
        first.start()
        await wait("the body delivered") { client.calls.contains(.load(bytes.count)) }
        gate.close()  // stopLoading; waits for the client call under way
        first.stop()
        let point = queue.sync { first.resumePoint() }
        if !client.calls.contains(.finish) {
            // FoundationNetworking resumes a task that has not finished.
            let second = BlobURLTransfer(
                request: URLRequest(url: url), source: source, delivery: .whole,
                gate: ProtocolClientGate(owner: owner, clientQueue: clientQueue), queue: queue, resuming: point)
            client.onLoad = nil
            second.start()
            clientQueue.resume()
            await wait("the end of the resumed transfer") { client.calls.contains(.finish) || client.calls.contains(.fail) }
        } else {
            clientQueue.resume()
        }
        let calls = client.calls
        #expect(calls == [.response(200), .load(bytes.count), .finish], "\(calls)")
    }
    /// A whole body of unknown length grows as bytes arrive, up to the limit: past it the task
    /// fails (typed, naming the URL), instead of growing without bound.
    @Test func wholeBodyOfUnknownLengthPastTheLimitFails() async throws {
        let source = ProbeDataSource(bytes: TempFiles.pseudoRandomBytes(count: 300_000, seed: 24), hidesLength: true, preferredBlockSize: 16 << 10)
        let client = RecordingClient()
        let url = URL(string: "x-unknown://blob")!
        let owner = URLProtocol(request: URLRequest(url: url), cachedResponse: nil, client: client)
        let transfer = BlobURLTransfer(
            request: URLRequest(url: url), source: source, delivery: .whole,
            gate: ProtocolClientGate(owner: owner, clientQueue: DispatchQueue(label: "client")),
            queue: DispatchQueue(label: "transfer"), resuming: nil, wholeBodyLimit: 100_000)
        transfer.start()
        await wait("the end of the transfer") { client.calls.contains(.finish) || client.calls.contains(.fail) }
        #expect(client.calls == [.response(200), .fail], "\(client.calls)")
        guard case .unsupportedURL(let named, let reason)? = client.error else {
            Issue.record("expected unsupportedURL, got \(String(describing: client.error))")
            return
        }
        #expect(named == url.absoluteString)
        #expect(reason.contains("delegate"), "\(reason)")
        await wait("the source closed") { source.calls.last == .close }
    }
}
