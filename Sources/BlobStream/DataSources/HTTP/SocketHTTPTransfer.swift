import Foundation
internal import HTTP1
internal import SystemCalls

/// An `http:` or `https:` range request on the package's own client (a pooled connection, plain
/// or TLS), run by a thread of its own.
///
/// Why not URLSession for plain HTTP: on Linux, URLSession cannot pause a download (its
/// `suspend()` removes the transfer from libcurl, and every body chunk is queued to the delegate
/// without bound), it hands the delegate 16 KiB at a time through an `OperationQueue` (about a
/// quarter of curl's speed on loopback), and it runs every session of the process on one
/// serial queue, which a synchronous reader must never block. Here the thread reads the socket
/// only while the read-ahead buffer has room, so a full buffer leaves the bytes in the kernel
/// and TCP flow control pauses the server: memory stays bounded, nothing is re-downloaded, and
/// the thread belongs to no shared queue.
final class SocketHTTPTransfer: HTTPTransfer {
    /// Bytes read from the socket at most at once into the staging buffer (a chunked body, or
    /// bytes to skip); also the most held outside the source's buffer.
    static let chunkSize = 256 * 1024
    /// Bytes received at most at once straight into the source's buffer: large, so a fast
    /// network hands the reader fewer, larger batches (each wakes it once).
    static let receiveLimit = 1 << 20

    private enum Stop: Error {
        /// Cancelled, refused by the sink, or redirected: nothing (more) to report.
        case quietly
        case failure(HTTPTransferFailure)
        /// Refused (401 or 403) with the header provider's fields: it is asked again with this
        /// renewal, and the request sent once more.
        case refused(HeaderRequest)
    }

    private let id: Int
    private let request: HTTPRangeRequest
    private let requestTimeout: TimeInterval
    private let idleTimeout: TimeInterval
    private let minimumSpeed: MinimumSpeed
    private let trust: TLSConfiguration
    private weak let sink: (any HTTPTransferSink)?
    private let call = HTTP1Cancellation()

    /// Kept-alive connections of every HTTP source in the process, per endpoint (host, port,
    /// TLS): a reconnect, a redirect within the origin, a reopen, or the next source reading
    /// the same server takes one whose last answer was read to its end.
    private static let idle = HTTP1ConnectionPool(limit: 4)
    /// Range requests are sent again on a new connection when a kept-alive one turns out stale.
    private static let policy = HTTP1ReusePolicy(takesIdle: true, resendsAfterStale: true)

    /// - Parameters:
    ///   - id: How the transfer names itself to `sink`.
    ///   - request: What to ask; its URL must be `http:` or `https:`.
    ///   - requestTimeout: The longest wait from connecting to the complete response head.
    ///   - idleTimeout: The longest wait for more body bytes while the buffer has room.
    ///   - minimumSpeed: The slowest the body may arrive while the buffer has room.
    ///   - trust: The certificate authorities an `https:` connection trusts.
    ///   - sink: Receives the events; held weakly, so a forgotten data source is not kept alive.
    init(
        id: Int, request: HTTPRangeRequest, requestTimeout: TimeInterval, idleTimeout: TimeInterval, minimumSpeed: MinimumSpeed,
        trust: TLSConfiguration, sink: any HTTPTransferSink
    ) {
        self.trust = trust
        self.id = id
        self.request = request
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.minimumSpeed = minimumSpeed
        self.sink = sink
    }

    func start() {
        WorkerThreads.shared.start("BlobStream HTTP \(request.url.host ?? "")") { [self] in run() }
    }

    func cancel() {
        call.cancel()
    }

    private func run() {
        do {
            try exchange()
            sink?.transfer(id, didFinishWith: nil)
        } catch {
            if case .failure(let failure) = error { sink?.transfer(id, didFinishWith: failure) }
        }
    }

    /// Runs the request, and once more when the header provider renews the fields of a
    /// request refused with 401 or 403.
    private func exchange() throws(Stop) {
        var asked = HeaderRequest(method: "GET", url: request.url)
        while true {
            do {
                let head = request.requestHead(adding: try providedFields(for: asked))
                return try exchange(head, renewing: request.headerProvider == nil ? nil : asked)
            } catch .refused(let renewal) {
                asked = renewal
            }
        }
    }

    /// The header provider's fields for `asked` (a first try, or a renewal after a refusal),
    /// waited for on this thread (a thread of its own, never one of Swift's pool).
    private func providedFields(for asked: HeaderRequest) throws(Stop) -> [String: String] {
        guard let provider = request.headerProvider else { return [:] }
        // On dispatch's threads: code that blocks on this transfer may hold the whole pool. A
        // provider that fetches its token from a slow server gets the request's time-out, and a
        // cancelled transfer stops waiting for it.
        let call = self.call
        guard let answer = waitForAsync(
            on: PullExecutor.shared, until: .now() + HTTP1Wait.boundedSeconds(requestTimeout), unless: { call.isCancelled },
            { () async -> [String: String] in await provider(asked) })
        else {
            if call.isCancelled { throw .quietly }
            throw .failure(.timedOut(operation: "waiting for the header provider", seconds: requestTimeout))
        }
        let fields = answer.get()
        if let problem = HTTPRangeRequest.problem(in: fields) {
            throw .failure(.unusable(reason: "the header provider's fields: \(problem)"))
        }
        return fields
    }

    /// Runs `head` on the request loop (``HTTP1ConnectionPool/run(to:trust:connectTimeout:policy:cancellation:exchange:)``);
    /// `renewing`: the provider's request for `head`, whose refusal is ``Stop/refused(_:)`` when
    /// it has a renewal (``HeaderRequest/renewal(after:)``).
    private func exchange(_ head: HTTPRequestHead, renewing: HeaderRequest?) throws(Stop) {
        guard let endpoint = head.endpoint else {
            throw .failure(.unusable(reason: "the URL has no host, or a port outside 1...65535"))
        }
        // Connect, request and response head: one deadline.
        let requestWait = HTTP1Wait.after(requestTimeout)
        var stop: Stop?
        do throws(HTTP1RequestFailure) {
            try Self.idle.run(
                to: endpoint, trust: trust, connectTimeout: requestTimeout, policy: Self.policy, cancellation: call
            ) { connection throws(HTTP1Error) in
                // Failures of these two reach the loop as they are: it resends after a stale one.
                try connection.send(head.serialized(), wait: requestWait)
                var leftover: [UInt8] = []
                let answer = try connection.readResponseHead(wait: requestWait, buffer: &leftover)
                switch Result(catching: { () throws(Stop) in
                    try respond(to: answer, leftover: leftover, on: connection, renewing: renewing)
                }) {
                case .success(let reusable): return ((), reusable)
                case .failure(let error):
                    stop = error
                    throw .cancelled
                }
            }
        } catch {
            if let stop { throw stop }
            throw Self.stop(for: error.error, operation: Self.operation(at: error.progress, endpoint), seconds: requestTimeout,
                            minimumSpeed: minimumSpeed)
        }
    }

    /// What the request was doing when it failed, as a time-out's message names it.
    private static func operation(at progress: HTTP1Progress?, _ endpoint: HTTP1Endpoint) -> String {
        switch progress?.stage {
        case nil, .connecting?: "connecting to \(endpoint)"
        case .handshaking?: "the TLS handshake with \(endpoint)"
        case .sending?: "sending the request"
        case .awaitingAnswer?, .readingAnswer?: "waiting for the response"
        }
    }

    /// Follows up the response head: reports a redirect, or delivers the body. Returns whether
    /// the connection can carry another request.
    private func respond(
        to answer: HTTPResponseHead, leftover: [UInt8], on connection: HTTP1Connection, renewing: HeaderRequest?
    ) throws(Stop) -> Bool {
        if let renewal = renewing?.renewal(after: answer.statusCode) {
            throw .refused(renewal)
        }
        if let location = answer.redirectLocation {
            sink?.transfer(id, redirectedTo: location, statusCode: answer.statusCode)
            throw .quietly
        }
        guard sink?.transfer(id, didReceive: answer) == true else { throw .quietly }
        let endedAtClose = try readBody(of: answer, leftover: leftover, on: connection)
        return !endedAtClose && answer.keepsConnection
    }

    /// Delivers the body, reading the socket only when the sink has room for what is read.
    /// Returns whether the body ended with the connection (its end is the close).
    private func readBody(of head: HTTPResponseHead, leftover: [UInt8], on connection: HTTP1Connection) throws(Stop) -> Bool {
        var decoder = try attempt("reading the response head", seconds: requestTimeout) { () throws(HTTP1Error) in
            try HTTPBodyDecoder(for: head)
        }
        let staging = UnsafeMutableRawBufferPointer.allocate(byteCount: max(Self.chunkSize, leftover.count), alignment: 16)
        defer { staging.deallocate() }
        leftover.withUnsafeBytes { staging.copyMemory(from: $0) }
        var pending = 0..<leftover.count
        // One pace for the whole body; waits for room in the buffer are outside its calls.
        let bodyWait = HTTP1Wait.pace(HTTP1Pace(
            minimumBytesPerSecond: minimumSpeed.bytesPerSecond, seconds: minimumSpeed.seconds, silence: idleTimeout))
        while !decoder.isComplete {
            let space: Int
            switch try waitForSpace(inPlace: pending.isEmpty && decoder.passesBytesThrough) {
            case .loan(let loan):
                if try receive(into: loan, decoder: &decoder, connection: connection, wait: bodyWait) { return true }
                continue
            case .bytes(let count): space = count
            }
            if pending.isEmpty {
                let limit = UnsafeMutableRawBufferPointer(rebasing: staging[0..<min(space, staging.count)])
                let count = try attempt("waiting for body bytes", seconds: idleTimeout) { () throws(HTTP1Error) in
                    try connection.receive(into: limit, wait: bodyWait)
                }
                if count == 0 {
                    if decoder.endsAtClose { return true }
                    throw closedEarly(decoder)
                }
                pending = 0..<count
            }
            let run = min(space, pending.count)
            let input = UnsafeRawBufferPointer(rebasing: staging[pending.lowerBound..<pending.lowerBound + run])
            pending = pending.lowerBound + run..<pending.upperBound
            let (consumed, stopped) = try attempt("reading the body", seconds: idleTimeout) { () throws(HTTP1Error) in
                try decoder.decode(input) { sink?.transfer(id, didReceive: $0) == true }
            }
            if stopped { throw .quietly }
            if decoder.isComplete, consumed < run || !pending.isEmpty { throw bytesPastTheBody(decoder) }
        }
        // A body complete from its head (`Content-Length: 0`) with bytes after the head.
        if !pending.isEmpty { throw bytesPastTheBody(decoder) }
        return decoder.endsAtClose
    }

    /// Receives body bytes straight into the sink's buffer (`loan`) and reports them. Returns
    /// whether the body ended with the connection.
    private func receive(
        into loan: ReadAheadBuffer.Loan, decoder: inout HTTPBodyDecoder, connection: HTTP1Connection, wait: HTTP1Wait
    ) throws(Stop) -> Bool {
        var received = 0
        var reported = false
        defer { if !reported { _ = sink?.transfer(id, received: 0, into: loan) } }
        received = try attempt("waiting for body bytes", seconds: idleTimeout) { () throws(HTTP1Error) in
            try connection.receive(into: loan.bytes, wait: wait)
        }
        if received == 0 {
            guard decoder.endsAtClose else { throw closedEarly(decoder) }
            return true
        }
        let input = UnsafeRawBufferPointer(rebasing: loan.bytes[0..<received])
        let (consumed, stopped) = try attempt("reading the body", seconds: idleTimeout) { () throws(HTTP1Error) in
            try decoder.decode(input) { payload in
                // Emitted in place, from the first byte (`passesBytesThrough`).
                reported = true
                return sink?.transfer(id, received: payload.count, into: loan) == true
            }
        }
        if stopped { throw .quietly }
        if decoder.isComplete, consumed < received { throw bytesPastTheBody(decoder) }
        return false
    }

    private func closedEarly(_ decoder: HTTPBodyDecoder) -> Stop {
        .failure(.connection(reason: "the connection closed after \(decoder.payloadBytes) body bytes, before the end of the body"))
    }

    private func bytesPastTheBody(_ decoder: HTTPBodyDecoder) -> Stop {
        .failure(.protocolViolation(reason: "the server sent more bytes after the \(decoder.payloadBytes) bytes of body its head declared"))
    }

    /// Where the next body bytes go.
    private enum Room {
        /// Through the staging buffer, at most this many.
        case bytes(Int)
        /// Straight into the sink's buffer.
        case loan(ReadAheadBuffer.Loan)
    }

    /// Asks the sink for room, waiting while the buffer is full.
    private func waitForSpace(inPlace: Bool) throws(Stop) -> Room {
        while true {
            switch sink?.transferSpace(id, inPlace: inPlace) ?? .stop {
            case .bytes(let count): return .bytes(count)
            case .loan(let loan): return .loan(loan)
            case .wait(let semaphore): semaphore.wait()
            case .stop: throw .quietly
            }
        }
    }

    /// Runs a connection call, translating its interruption into how the transfer stops.
    private func attempt<T>(_ operation: String, seconds: TimeInterval, _ call: () throws(HTTP1Error) -> T) throws(Stop) -> T {
        do {
            return try call()
        } catch {
            throw Self.stop(for: error, operation: operation, seconds: seconds, minimumSpeed: minimumSpeed)
        }
    }

    /// How a connection's `error` during `operation` (bounded by `seconds`) stops the transfer.
    private static func stop(for error: HTTP1Error, operation: String, seconds: TimeInterval, minimumSpeed: MinimumSpeed) -> Stop {
        switch error {
        case .cancelled: return .quietly
        case .timedOut: return .failure(.timedOut(operation: operation, seconds: seconds))
        case .network(let reason, .secureConnectionFailed): return .failure(.unusable(reason: "a secure connection failed: \(reason)"))
        case .tooSlow(let bytes, let elapsed, let minimum):
            let rate = HTTP1Error.tooSlow(bytes: bytes, seconds: elapsed, minimumBytesPerSecond: minimum).reason
            return .failure(.tooSlow(operation: "\(operation) (\(rate))", seconds: minimumSpeed.seconds))
        case .network(let reason, _): return .failure(.connection(reason: reason))
        case .protocolViolation(let reason): return .failure(.protocolViolation(reason: reason))
        case .answerTooLong: return .failure(.protocolViolation(reason: error.reason))
        }
    }
}
