import Foundation
import Synchronization
internal import HTTP1

/// An `http:` range request over a plain TCP connection, run by a thread of its own.
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
    /// Bytes read from the socket at most at once; also the most held outside the buffer.
    static let chunkSize = 256 * 1024

    private enum Stop: Error {
        /// Cancelled, refused by the sink, or redirected: nothing (more) to report.
        case quietly
        case failure(HTTPTransferFailure)
    }

    private let id: Int
    private let request: HTTPRangeRequest
    private let requestTimeout: TimeInterval
    private let idleTimeout: TimeInterval
    private let minimumSpeed: MinimumSpeed
    private let trust: TLSConfiguration
    private weak let sink: (any HTTPTransferSink)?
    /// The connection of the current try (a refusal renewed by the header provider makes a
    /// second one), and whether the transfer was cancelled.
    private let current = Mutex<(connection: HTTP1Connection, cancelled: Bool)>((HTTP1Connection(), false))
    private var connection: HTTP1Connection { current.withLock { $0.connection } }

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
        let thread = Thread { [self] in run() }
        thread.name = "BlobStream HTTP \(request.url.host ?? "")"
        thread.start()
    }

    func cancel() {
        current.withLock { state in
            state.cancelled = true
            return state.connection
        }.cancel()
    }

    /// Replaces the connection with a new one for another try; `false` once cancelled.
    private func renewConnection() -> Bool {
        let old = current.withLock { state -> HTTP1Connection? in
            guard !state.cancelled else { return nil }
            defer { state.connection = HTTP1Connection() }
            return state.connection
        }
        old?.close()
        return old != nil
    }

    /// The header provider's fields for a request refused with `refusedStatus` (or a first
    /// try), waited for on this thread (a thread of its own, never one of Swift's pool).
    private func providedFields(refusedStatus: Int?) throws(Stop) -> [String: String] {
        guard let provider = request.headerProvider else { return [:] }
        let fields = Self.waitFor(provider, HeaderRequest(method: "GET", url: request.url, refusedStatus: refusedStatus))
        if let problem = HTTPRangeRequest.problem(in: fields) {
            throw .failure(.unusable(reason: "the header provider's fields: \(problem)"))
        }
        return fields
    }

    private static func waitFor(_ provider: @escaping HeaderProvider, _ request: HeaderRequest) -> [String: String] {
        let result = Mutex<[String: String]>([:])
        let done = DispatchSemaphore(value: 0)
        // Not on the cooperative pool, which code blocking on this transfer may hold.
        Task(executorPreference: DispatchTaskExecutor.shared) {
            let fields = await provider(request)
            result.withLock { $0 = fields }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    private func run() {
        do {
            try exchange()
            sink?.transfer(id, didFinishWith: nil)
        } catch {
            if case .failure(let failure) = error { sink?.transfer(id, didFinishWith: failure) }
        }
    }

    /// One exchange, and one more when the header provider renews the fields of a request
    /// refused with 401 or 403.
    private func exchange() throws(Stop) {
        var refused: Int?
        while true {
            let head = request.requestHead(adding: try providedFields(refusedStatus: refused))
            let (answer, leftover) = try askForHead(head)
            if request.headerProvider != nil, refused == nil, HeaderRequest.refreshingStatuses.contains(answer.statusCode) {
                refused = answer.statusCode
                guard renewConnection() else { throw .quietly }
                continue
            }
            if let location = answer.redirectLocation {
                guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL else {
                    throw .failure(.protocolViolation(reason: "the redirect location \"\(location)\" is not a URL"))
                }
                sink?.transfer(id, redirectedTo: target, statusCode: answer.statusCode)
                throw .quietly
            }
            guard sink?.transfer(id, didReceive: answer) == true else { throw .quietly }
            return try readBody(of: answer, leftover: leftover)
        }
    }

    /// Connects, sends `head` and reads the answer's head; returns it with the bytes read past it.
    private func askForHead(_ head: HTTPRequestHead) throws(Stop) -> (HTTPResponseHead, [UInt8]) {
        guard let endpoint = head.endpoint else {
            throw .failure(.unusable(reason: "the URL has no host, or a port outside 1...65535"))
        }
        let requestWait = HTTP1Wait.after(requestTimeout)
        try attempt("connecting to \(endpoint)", seconds: requestTimeout) { () throws(HTTP1Error) in
            try connection.connect(to: endpoint, trust: trust, wait: requestWait)
        }
        try attempt("sending the request", seconds: requestTimeout) { () throws(HTTP1Error) in
            try connection.send(head.serialized(), wait: requestWait)
        }
        var leftover: [UInt8] = []
        let answer = try attempt("waiting for the response", seconds: requestTimeout) { () throws(HTTP1Error) in
            try connection.readResponseHead(wait: requestWait, buffer: &leftover)
        }
        return (answer, leftover)
    }

    /// Delivers the body, reading the socket only when the sink has room for what is read.
    private func readBody(of head: HTTPResponseHead, leftover: [UInt8]) throws(Stop) {
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
            let space = try waitForSpace()
            if pending.isEmpty {
                let limit = UnsafeMutableRawBufferPointer(rebasing: staging[0..<min(space, staging.count)])
                let count = try attempt("waiting for body bytes", seconds: idleTimeout) { () throws(HTTP1Error) in
                    try connection.receive(into: limit, wait: bodyWait)
                }
                if count == 0 {
                    if decoder.endsAtClose { return }
                    throw .failure(.connection(reason: "the connection closed after \(decoder.payloadBytes) body bytes, before the end of the body"))
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
            if decoder.isComplete, consumed < run || !pending.isEmpty {
                throw .failure(.protocolViolation(reason: "the server sent more bytes after the \(decoder.payloadBytes) bytes of body its head declared"))
            }
        }
    }

    /// Asks the sink for room, waiting while the buffer is full.
    private func waitForSpace() throws(Stop) -> Int {
        while true {
            switch sink?.transferSpace(id) ?? .stop {
            case .bytes(let count): return count
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
            switch error {
            case .cancelled: throw .quietly
            case .timedOut: throw .failure(.timedOut(operation: operation, seconds: seconds))
            case .network(let reason, .secureConnectionFailed): throw .failure(.unusable(reason: "a secure connection failed: \(reason)"))
            case .tooSlow(let bytes, let elapsed, let minimum):
                let rate = HTTP1Error.tooSlow(bytes: bytes, seconds: elapsed, minimumBytesPerSecond: minimum).reason
                throw .failure(.tooSlow(operation: "\(operation) (\(rate))", seconds: minimumSpeed.seconds))
            case .network(let reason, _): throw .failure(.connection(reason: reason))
            case .protocolViolation(let reason): throw .failure(.protocolViolation(reason: reason))
            }
        }
    }
}
