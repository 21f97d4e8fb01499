import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One `startLoading`: an asynchronous ``BlobInputStream`` over the URL's source, its events
/// on the protocol's serial queue, and its client calls sent through a ``ProtocolClientGate``.
///
/// The stream does what it does for any consumer: reopens a stale source at the same byte,
/// fails a changed one with ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never
/// ends short of a known length. No thread waits: the stream tells the queue when bytes can be
/// read, and a streaming delivery waits for the delegate queue to take its blocks
/// (``window`` blocks at most in flight), so memory stays at a few blocks whatever the blob's
/// size.
final class BlobURLTransfer: NSObject, StreamDelegate, @unchecked Sendable {
    /// How many streamed blocks may be handed to URLSession and not yet taken by its delegate
    /// queue.
    static let window = 4

    /// How far a stopped transfer got, so a `startLoading` after `stopLoading` (what
    /// FoundationNetworking's `suspend()`/`resume()` do) continues instead of starting over.
    struct ResumePoint {
        /// The response already sent.
        var plan: BlobResponsePlan
        /// The blob's length when that response was sent.
        var length: Int64?
        /// Body bytes the client already has (streamed delivery only; a whole body is sent at
        /// the end, so there it is 0).
        var delivered: Int64
    }

    private let request: URLRequest
    private let source: DescribedDataSource
    private let stream: BlobInputStream
    private let delivery: BodyDelivery
    private let gate: ProtocolClientGate
    private let queue: DispatchQueue

    // Touched only on `queue`.
    private var plan: BlobResponsePlan?
    private var remaining: Int64?
    /// The body of a `.whole` delivery, as it arrives.
    private var body: WholeBodyBuffer?
    /// Body bytes earlier transfers of the task delivered (after a suspend and resume).
    private var deliveredBefore: Int64 = 0
    private var length: Int64?
    private let resuming: ResumePoint?
    /// ``BlobURLProtocol/maximumWholeBodyLength`` when the transfer began.
    private let wholeBodyLimit: Int64
    private var credits = BlobURLTransfer.window
    private var readWanted = false
    private var done = false
    /// Set by ``stop()`` from any thread: a credit or event already queued then finds the
    /// transfer over, instead of reading the closed stream and failing the task.
    private let stopped = Atomic<Bool>(false)

    init(
        request: URLRequest, source: any BlobDataSource, delivery: BodyDelivery, gate: ProtocolClientGate,
        queue: DispatchQueue, resuming: ResumePoint?, wholeBodyLimit: Int64 = BlobURLProtocol.maximumWholeBodyLength
    ) {
        self.wholeBodyLimit = wholeBodyLimit
        self.request = request
        self.resuming = resuming
        self.source = DescribedDataSource(source)
        self.stream = BlobInputStream(dataSource: self.source, mode: .asynchronous)
        self.delivery = delivery
        self.gate = gate
        self.queue = queue
    }

    /// Opens the stream; a `bytes=a-…` request starts reading at `a` rather than at 0.
    func start() {
        stream.delegate = self
        stream.delegateQueue = queue
        let start = resuming.map { $0.plan.start + $0.delivered } ?? BlobResponsePlan.startOffsetBeforeOpen(for: request)
        if start > 0 { try? stream.seek(to: start) }
        stream.open()
    }

    /// Where a later transfer of the same task continues; call on the protocol's queue after
    /// ``stop()``. `nil` when the client has no response yet (start afresh, response first):
    /// a response planned and queued may have been dropped by the `stopLoading` that closed
    /// the gate, and then everything queued after it was dropped too. A transfer that itself
    /// continued another has the client's response from that one: stopped before it went on,
    /// it hands on the point it was given.
    func resumePoint() -> ResumePoint? {
        if let resuming, plan == nil { return resuming }
        guard let plan, gate.responseDelivered || resuming != nil else { return nil }
        if case .whole = delivery { return ResumePoint(plan: plan, length: length, delivered: 0) }
        return ResumePoint(plan: plan, length: length, delivered: deliveredBefore + gate.deliveredBodyBytes)
    }

    /// Closes the source at once; callable from any thread. The caller closes the gate first,
    /// so nothing reaches the client afterwards, and the stream posts no event after `close()`.
    func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        stream.close()
    }

    /// Whether nothing more is to be done: the transfer ended or was stopped.
    private var isOver: Bool { done || stopped.load(ordering: .sequentiallyConsistent) }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard !isOver else { return }
        switch eventCode {
        case .openCompleted: respond()
        case .hasBytesAvailable: pump()
        case .endEncountered: endOfData()
        case .errorOccurred: openOrReadFailed()
        default: break
        }
    }

    private func respond() {
        guard let description = source.firstDescription else {
            return fail(.sourceFailed(resource: source.resourceName, reason: "the source opened without a description"))
        }
        if let resuming { return resume(resuming, description: description) }
        let plan = BlobResponsePlan(request: request, description: description)
        if plan.sendsBody, plan.start != stream.offset {
            do throws(BlobStreamError) { try stream.seek(to: plan.start) } catch { return fail(error) }
        }
        length = description.length
        if plan.sendsBody, let refusal = wholeBodyRefusal(bodyLength: plan.count) { return fail(refusal) }
        sendResponse(plan)
        guard plan.sendsBody, plan.count != 0 else { return finish() }
        startBody(count: plan.count)
    }

    /// Continues a body whose response an earlier transfer sent, if the blob is still the one
    /// that response described.
    private func resume(_ point: ResumePoint, description: BlobSourceDescription) {
        let start = point.plan.start + point.delivered
        guard description.length == point.length,
            BlobResponsePlan.entityTag(for: description.version) == point.plan.headerFields["ETag"]
        else {
            return fail(.sourceChanged(resource: source.resourceName, offset: start, reason: "the blob changed while the task was suspended"))
        }
        plan = point.plan
        length = point.length
        deliveredBefore = point.delivered
        guard point.plan.sendsBody, point.plan.count.map({ $0 > point.delivered }) ?? true else { return finish() }
        if start != stream.offset {
            do throws(BlobStreamError) { try stream.seek(to: start) } catch { return fail(error) }
        }
        startBody(count: point.plan.count.map { $0 - point.delivered })
    }

    private func startBody(count: Int64?) {
        remaining = count
        if case .whole = delivery {
            // Not more than a block up front for an unknown length: it grows as bytes arrive.
            let capacity = count.map { Int($0) } ?? max(stream.blockSize, 1)
            guard let buffer = WholeBodyBuffer(capacity: capacity) else { return fail(allocationFailure(capacity)) }
            body = buffer
        }
        pump()
    }

    /// Why a whole-body delivery of `bodyLength` bytes (`nil`: unknown yet) is refused, if it is:
    /// over ``BlobURLProtocol/maximumWholeBodyLength`` the task would hold it all in memory.
    /// For a body of unknown length, called with the bytes so far (`soFar`).
    private func wholeBodyRefusal(bodyLength: Int64?, soFar: Bool = false) -> BlobStreamError? {
        guard case .whole = delivery else { return nil }
        let limit = wholeBodyLimit
        guard let bodyLength, bodyLength > limit else { return nil }
        return .unsupportedURL(
            url: request.url?.absoluteString ?? source.resourceName,
            reason: "the body is \(soFar ? "at least " : "")\(bodyLength) bytes, more than BlobURLProtocol.maximumWholeBodyLength (\(limit)) that a "
                + "completion-handler or async task receives in one piece; use a data task with a session delegate, which streams it")
    }

    private func allocationFailure(_ bytes: Int) -> BlobStreamError {
        .system(resource: request.url?.absoluteString ?? source.resourceName, operation: "allocate \(bytes) bytes for the whole body",
                offset: nil, errno: ENOMEM)
    }

    private func sendResponse(_ plan: BlobResponsePlan) {
        self.plan = plan
        guard let url = request.url,
            let response = HTTPURLResponse(url: url, statusCode: plan.statusCode, httpVersion: "HTTP/1.1", headerFields: plan.headerFields)
        else { return }
        gate.send(isResponse: true) { client, owner in
            client.urlProtocol(owner, didReceive: response, cacheStoragePolicy: .notAllowed)
        }
    }

    /// Reads one block (the stream posts `.hasBytesAvailable` again while bytes are left).
    private func pump() {
        guard !isOver, plan != nil else { return }
        if case .streamed = delivery, credits == 0 {
            readWanted = true
            return
        }
        readWanted = false
        let want = Int(min(Int64(max(stream.blockSize, 1)), remaining ?? Int64.max))
        let count: Int
        var chunk = Data()
        if case .whole = delivery {
            guard let body else { return }
            guard let read = body.append(upTo: want, { stream.read($0, maxLength: want) }) else {
                return fail(allocationFailure(body.count + want))
            }
            count = read
            if remaining == nil, let refusal = wholeBodyRefusal(bodyLength: Int64(body.count), soFar: true) { return fail(refusal) }
        } else {
            chunk = Data(count: want)
            count = chunk.withUnsafeMutableBytes { stream.read($0.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: want) }
            if count > 0 { chunk.count = count }
        }
        guard count > 0 else {
            if count < 0, let error = stream.blobError, case .wouldBlock = error { return }
            if count < 0 { openOrReadFailed() }
            return  // 0: the end; `.endEncountered` follows
        }
        remaining = remaining.map { $0 - Int64(count) }
        switch delivery {
        case .streamed(let delegateQueue):
            deliver(chunk, through: delegateQueue)
        case .whole, .refused:
            break
        }
        if remaining == 0 { finish() }
    }

    /// Hands one block to URLSession and takes its credit back once the delegate queue has run
    /// past it (FoundationNetworking queues `didReceive(data)` there before this operation).
    private func deliver(_ chunk: Data, through delegateQueue: OperationQueue) {
        credits -= 1
        gate.send(bodyBytes: chunk.count) { [queue] client, owner in
            client.urlProtocol(owner, didLoad: chunk)
            delegateQueue.addOperation {
                queue.async {
                    self.credits += 1
                    if self.readWanted { self.pump() }
                }
            }
        }
    }

    private func endOfData() {
        if let remaining, remaining > 0 {
            // The stream never ends short of a known length; a range past the end of a blob
            // whose length changed would, and must not look like success.
            return fail(.unexpectedEnd(resource: source.resourceName, offset: stream.offset, expectedLength: stream.offset + remaining))
        }
        finish()
    }

    private func openOrReadFailed() {
        let error = stream.blobError ?? .sourceFailed(resource: source.resourceName, reason: "the stream failed without an error")
        if plan == nil, resuming == nil, case .invalidOffset(_, _, let length) = error {
            // A `bytes=a-` start at or past the end, refused by the open.
            let plan = BlobResponsePlan.unsatisfiable(length: length)
            sendResponse(plan)
            return finish()
        }
        fail(error)
    }

    private func finish() {
        done = true
        stream.close()
        // The whole body and the finish in one client-queue block: a stopLoading between two
        // blocks would drop the finish and, on resume, have the body sent again.
        let data = body?.take() ?? Data()
        body = nil
        gate.send { client, owner in
            if !data.isEmpty { client.urlProtocol(owner, didLoad: data) }
            client.urlProtocolDidFinishLoading(owner)
        }
        gate.closeAfterSent()
    }

    private func fail(_ error: BlobStreamError) {
        done = true
        stream.close()
        body = nil
        gate.send { client, owner in client.urlProtocol(owner, didFailWithError: error) }
        gate.closeAfterSent()
    }
}
