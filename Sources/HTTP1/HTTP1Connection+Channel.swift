import Dispatch
internal import SystemCalls

/// What one try to move bytes across a connection did.
enum ChannelStep {
    /// Moved this many bytes (more than zero); for a handshake, finished.
    case done(Int)
    /// Try again once the socket is ready for this.
    case wait(PollEvent)
    /// The peer ended its side: the end of its data.
    case closed
}

/// How an ``HTTP1Connection``'s bytes cross its socket: as they are (`http:`), or through a
/// TLS session (`https:`). Each call tries once and never waits: the connection waits, so
/// deadlines and cancellation are the same for both.
enum Channel: Sendable {
    case plain
    #if canImport(CBlobStreamTLS) && os(Linux)
    case tls(TLSSession)
    #endif

    func send(_ bytes: UnsafeRawBufferPointer, on fd: FileDescriptor) throws(HTTP1Error) -> ChannelStep {
        switch self {
        case .plain:
            switch fd.send(bytes) {
            case .success(let count): return .done(count)
            case .failure(let failure) where failure.isWouldBlock: return .wait(.writable)
            case .failure(let failure): throw .network(reason: "send: \(failure.text)", cause: .lost)
            }
        #if canImport(CBlobStreamTLS) && os(Linux)
        case .tls(let session):
            return try session.write(bytes)
        #endif
        }
    }

    /// The bytes a TLS session ever received from the socket, before decryption; `nil` for a
    /// plain channel, whose received bytes are those it returns.
    var wireBytesReceived: UInt64? {
        switch self {
        case .plain: return nil
        #if canImport(CBlobStreamTLS) && os(Linux)
        case .tls(let session): return session.bytesReceived
        #endif
        }
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer, on fd: FileDescriptor) throws(HTTP1Error) -> ChannelStep {
        switch self {
        case .plain:
            switch fd.receive(into: buffer) {
            case .success(0): return .closed
            case .success(let count): return .done(count)
            case .failure(let failure) where failure.isWouldBlock: return .wait(.readable)
            case .failure(let failure): throw .network(reason: "recv: \(failure.text)", cause: .lost)
            }
        #if canImport(CBlobStreamTLS) && os(Linux)
        case .tls(let session):
            return try session.read(into: buffer)
        #endif
        }
    }
}

extension HTTP1Connection {
    /// Runs the TLS handshake for `host` on the connected socket until `deadline`.
    func startTLS(_ configuration: TLSConfiguration, host: String, deadline: DispatchTime) throws(HTTP1Error) {
        #if canImport(CBlobStreamTLS) && os(Linux)
        guard let fd = socket.withLock({ $0 }) else { throw .network(reason: "the connection is not open", cause: .lost) }
        let session = try TLSSession(context: TLSContext.context(for: configuration), socket: fd, host: host)
        while true {
            try checkCancelled()
            switch try session.handshake() {
            case .done: 
                channel.withLock { $0 = .tls(session) }
                return
            case .wait(let event): try wait(for: event, on: fd, until: deadline)
            case .closed: throw .network(reason: "the server closed the connection during the TLS handshake", cause: .secureConnectionFailed)
            }
        }
        #else
        throw .network(reason: "this build has no TLS of its own; https: goes through URLSession", cause: .secureConnectionFailed)
        #endif
    }
}
