import Foundation

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
    /// The longest response head read; ``HTTPResponseHead/framingViolation`` holds both
    /// transports to the same limit on the fields.
    static let maxHeadSize = HTTPResponseHead.maxHeadBytes
    /// Bytes received at once while reading the head.
    static let headReadSize = 16 * 1024

    private enum Stop: Error {
        /// Cancelled, refused by the sink, or redirected: nothing (more) to report.
        case quietly
        case failure(HTTPTransferFailure)
    }

    private let id: Int
    private let request: HTTPRangeRequest
    private let requestTimeout: TimeInterval
    private let idleTimeout: TimeInterval
    private weak let sink: (any HTTPTransferSink)?
    private let connection = TCPConnection()

    /// - Parameters:
    ///   - id: How the transfer names itself to `sink`.
    ///   - request: What to ask; its URL must be `http:`.
    ///   - requestTimeout: The longest wait from connecting to the complete response head.
    ///   - idleTimeout: The longest wait for more body bytes while the buffer has room.
    ///   - sink: Receives the events; held weakly, so a forgotten data source is not kept alive.
    init(id: Int, request: HTTPRangeRequest, requestTimeout: TimeInterval, idleTimeout: TimeInterval, sink: any HTTPTransferSink) {
        self.id = id
        self.request = request
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.sink = sink
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "BlobStream HTTP \(request.url.host ?? "")"
        thread.start()
    }

    func cancel() {
        connection.cancel()
    }

    private func run() {
        do {
            try exchange()
            sink?.transfer(id, didFinishWith: nil)
        } catch {
            if case .failure(let failure) = error { sink?.transfer(id, didFinishWith: failure) }
        }
    }

    private func exchange() throws(Stop) {
        guard let host = request.url.host, !host.isEmpty else {
            throw .failure(.unusable(reason: "the URL has no host"))
        }
        let port = request.url.port ?? 80
        let requestDeadline = DispatchTime.now() + requestTimeout
        try attempt("connecting to \(host):\(port)", seconds: requestTimeout) { () throws(TCPConnection.Interruption) in
            try connection.connect(host: host, port: port, deadline: requestDeadline)
        }
        try attempt("sending the request", seconds: requestTimeout) { () throws(TCPConnection.Interruption) in
            try connection.send(request.serialized(), deadline: requestDeadline)
        }
        let staging = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { staging.deallocate() }
        let (head, leftover) = try readHead(staging: staging, deadline: requestDeadline)
        if let location = head.redirectLocation {
            guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL else {
                throw .failure(.protocolViolation(reason: "the redirect location \"\(location)\" is not a URL"))
            }
            sink?.transfer(id, redirectedTo: target, statusCode: head.statusCode)
            throw .quietly
        }
        guard sink?.transfer(id, didReceive: head) == true else { throw .quietly }
        try readBody(of: head, leftover: leftover, staging: staging)
    }

    /// Reads until the end of the final (non-1xx) response head; returns it and the body bytes
    /// that came with it. Receives ``headReadSize`` bytes at a time, so those bytes (at most
    /// ``maxHeadSize`` + ``headReadSize``) fit in the staging buffer.
    private func readHead(staging: UnsafeMutableRawBufferPointer, deadline: DispatchTime) throws(Stop) -> (HTTPResponseHead, [UInt8]) {
        var bytes: [UInt8] = []
        while true {
            if let end = Self.endOfHead(in: bytes) {
                guard let head = HTTPResponseHead(parsing: bytes[..<end]) else {
                    throw .failure(.protocolViolation(reason: "the server sent a malformed response head"))
                }
                let rest = Array(bytes[(end + 4)...])
                if (100...199).contains(head.statusCode) && head.statusCode != 101 {
                    bytes = rest
                    continue
                }
                return (head, rest)
            }
            guard bytes.count < Self.maxHeadSize else {
                throw .failure(.protocolViolation(reason: "the response head is longer than \(Self.maxHeadSize) bytes"))
            }
            let count = try attempt("waiting for the response", seconds: requestTimeout) { () throws(TCPConnection.Interruption) in
                try connection.receive(into: UnsafeMutableRawBufferPointer(rebasing: staging[0..<Self.headReadSize]), deadline: deadline)
            }
            guard count > 0 else {
                throw .failure(.connection(reason: "the server closed the connection before answering"))
            }
            bytes += staging[0..<count]
        }
    }

    /// Delivers the body, reading the socket only when the sink has room for what is read.
    /// `leftover` (body bytes that arrived with the head) fits in `staging`, see ``readHead``.
    private func readBody(of head: HTTPResponseHead, leftover: [UInt8], staging: UnsafeMutableRawBufferPointer) throws(Stop) {
        var decoder = HTTPBodyDecoder(for: head)
        leftover.withUnsafeBytes { staging.copyMemory(from: $0) }
        var pending = 0..<leftover.count
        var bodyBytes: Int64 = 0
        while !decoder.isComplete {
            let space = try waitForSpace()
            if pending.isEmpty {
                let limit = UnsafeMutableRawBufferPointer(rebasing: staging[0..<min(space, staging.count)])
                let count = try attempt("waiting for body bytes", seconds: idleTimeout) { () throws(TCPConnection.Interruption) in
                    try connection.receive(into: limit, deadline: .now() + idleTimeout)
                }
                if count == 0 {
                    if decoder.endsAtClose { return }
                    throw .failure(.connection(reason: "the connection closed after \(bodyBytes) body bytes, before the end of the body"))
                }
                pending = 0..<count
            }
            let run = min(space, pending.count)
            let input = UnsafeRawBufferPointer(rebasing: staging[pending.lowerBound..<pending.lowerBound + run])
            pending = pending.lowerBound + run..<pending.upperBound
            let keepGoing: Bool
            do {
                keepGoing = try decoder.decode(input) { deliver($0, counting: &bodyBytes) }
            } catch {
                throw .failure(error)
            }
            if !keepGoing { throw .quietly }
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer, counting total: inout Int64) -> Bool {
        total += Int64(bytes.count)
        return sink?.transfer(id, didReceive: bytes) == true
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
    private func attempt<T>(_ operation: String, seconds: TimeInterval, _ call: () throws(TCPConnection.Interruption) -> T) throws(Stop) -> T {
        do {
            return try call()
        } catch {
            switch error {
            case .cancelled: throw .quietly
            case .timedOut: throw .failure(.timedOut(operation: operation, seconds: seconds))
            case .failed(let reason): throw .failure(.connection(reason: reason))
            }
        }
    }

    /// The index of the CRLFCRLF that ends a response head, if `bytes` holds one.
    private static func endOfHead(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
