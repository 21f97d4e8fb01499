import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
internal import SystemCalls
#endif

/// Serves every scheme of ``BlobURLRegistry/shared`` (except `http` and `https`, which stay
/// with URLSession's own protocol) to the URL Loading System, so any code that takes a URL —
/// `URLSession.data(from:)`, an image loader, a player — can load `asset://?id=…` or an app's
/// own scheme.
///
/// Set up a session with ``install(into:)``. Each request is answered like an HTTP server
/// would: `HTTPURLResponse` 200 with `Content-Length` (when the length is known),
/// `Content-Type` (when the source knows its media type), `ETag` (from the source's version
/// version) and `Accept-Ranges: bytes`; `Range: bytes=a-b`, `a-` or `-n` gets 206 with
/// `Content-Range`, an unsatisfiable range 416, `HEAD` the head alone. Responses carry
/// `Cache-Control: no-store` and are never stored in `URLCache`: blobs are large and local.
///
/// A failure ends the task with the typed ``BlobStreamError`` as its error (`error as?
/// BlobStreamError` works on the caller's side); a task never completes short. On Linux,
/// download tasks are refused with ``BlobStreamError/unsupportedURL(url:reason:)`` (see
/// ``BodyDelivery``), and completion-handler and `async` data tasks get the body in one piece,
/// while delegate data tasks get it block by block with bounded memory.
///
/// Threads: the source is read on this protocol's own serial queue, and the client is called on
/// the queue that called `startLoading` (the task's work queue, where FoundationNetworking's own
/// protocols call it; see ``ProtocolClientGate``), never after `stopLoading`. No thread waits
/// for a source.
public final class BlobURLProtocol: URLProtocol {
    /// Serial, on the library's shared work queues (``SharedWorkQueues``): many requests share
    /// a few threads, and none of them is a thread of Dispatch's global pool, which Swift's
    /// tasks use on Linux and an app's blocked tasks could stall.
    private let queue = DispatchQueue(label: "BlobURLProtocol", target: SharedWorkQueues.next())
    private static let wholeBodyLimit = LockedValue<Int64>(1 << 30)

    /// The largest body a completion-handler or `async` data task is given (1 GiB unless set):
    /// FoundationNetworking hands those tasks one `Data`, so the whole body is held in memory.
    /// A larger one fails the task with ``BlobStreamError/unsupportedURL(url:reason:)`` before
    /// any memory is taken for it; a data task with a session delegate streams any size.
    public static var maximumWholeBodyLength: Int64 {
        get { wholeBodyLimit.withLock { $0 } }
        set { wholeBodyLimit.withLock { $0 = newValue } }
    }
    private let lock = NSLock()
    private var transfer: BlobURLTransfer?
    private var stopped: BlobURLTransfer?
    private var gate: ProtocolClientGate?

    /// Puts ``BlobURLProtocol`` first in `configuration.protocolClasses`, so sessions made from
    /// it load every registered scheme.
    public static func install(into configuration: URLSessionConfiguration) {
        let others = (configuration.protocolClasses ?? []).filter { $0 != BlobURLProtocol.self }
        configuration.protocolClasses = [BlobURLProtocol.self] + others
    }

    /// True for a URL whose scheme ``BlobURLRegistry/shared`` has a source for, except `http`
    /// and `https`.
    public override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme?.lowercased(), scheme != "http", scheme != "https" else { return false }
        return BlobURLRegistry.shared.schemes.contains(scheme)
    }

    /// False for download tasks, which a custom protocol cannot serve in FoundationNetworking.
    /// Linux's URLSession does not ask this (it asks only ``canInit(with:)-(URLRequest)``), so
    /// `startLoading` refuses them too.
    public override class func canInit(with task: URLSessionTask) -> Bool {
        guard !(task is URLSessionDownloadTask), let request = task.currentRequest else { return false }
        return canInit(with: request)
    }

    /// The request unchanged: the registry's factory decides what a URL means.
    public override class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    /// Opens the URL's source and starts answering, asynchronously, on this protocol's queue.
    public override func startLoading() {
        // The client is answered on the queue that called this (the task's work queue); only if
        // it cannot be found, on this protocol's own queue.
        let clientQueue = task.flatMap(TaskInternals.workQueue(of:)) ?? queue
        let gate = ProtocolClientGate(owner: self, clientQueue: clientQueue)
        let request = self.request
        let delivery = BodyDelivery.choose(for: task)
        let source: any BlobDataSource
        do throws(BlobStreamError) {
            guard let url = request.url else { throw .unsupportedURL(url: "", reason: "the request has no URL") }
            if case .refused(let reason) = delivery { throw .unsupportedURL(url: url.absoluteString, reason: reason) }
            source = try BlobURLRegistry.shared.dataSource(for: url)
        } catch {
            lock.withLock { self.gate = gate }
            gate.send { client, owner in client.urlProtocol(owner, didFailWithError: error) }
            gate.closeAfterSent()
            return
        }
        // A start after a stop is a resumed task (FoundationNetworking's suspend/resume): go on
        // from what the client already has. The stopped transfer's state lives on `queue`.
        let previous = lock.withLock { stopped }
        let resuming = previous.flatMap { previous in queue.sync { previous.resumePoint() } }
        let transfer = BlobURLTransfer(
            request: request, source: source, delivery: delivery, gate: gate, queue: queue, resuming: resuming)
        lock.withLock {
            self.gate = gate
            self.transfer = transfer
        }
        transfer.start()
    }

    /// Closes the source at once; no client call comes after this returns.
    public override func stopLoading() {
        let (gate, running) = lock.withLock {
            defer {
                if let current = self.transfer { stopped = current }
                self.transfer = nil
            }
            return (self.gate, self.transfer)
        }
        gate?.close()
        running?.stop()
    }
}
