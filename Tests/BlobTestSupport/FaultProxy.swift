import Dispatch
import Foundation
import Glibc
import SystemCalls

/// An in-process TCP proxy on 127.0.0.1 that forwards every accepted connection to
/// 127.0.0.1:`targetPort` and can break chosen connections, so tests see what real network
/// failures look like to a client (a reset mid-body, a peer that goes silent).
///
/// Faults are planned per connection: each accepted connection takes the next planned
/// ``Fault`` (in order), and connections accepted once the plan is used up pass through.
/// A fault acts on the first byte past its `after` count in its direction: the peer receives
/// exactly `after` bytes, then the fault; a stream that never exceeds `after` bytes is untouched.
///
/// Thread-safe. Each connection is relayed by its own thread. Call ``stop()`` when done
/// (deinit does it too); it resets the connections still open.
public final class FaultProxy: Sendable {
    /// Which way bytes flow through the proxy.
    public enum Direction: Sendable, Equatable {
        /// From the client to the target (request heads and bodies, upload data).
        case request
        /// From the target to the client (response heads and bodies, download data).
        case response
    }

    /// What happens to one connection.
    public enum Fault: Sendable, Equatable {
        /// Forward everything unchanged.
        case none
        /// After `after` bytes in `direction`, close both sides with a reset (SO_LINGER 0).
        case cut(after: Int, direction: Direction)
        /// After `after` bytes in `direction`, forward nothing more that way and keep the
        /// connection open until the client closes it or the proxy stops. The other
        /// direction keeps flowing.
        case stall(after: Int, direction: Direction)
        /// After `after` bytes in `direction`, end that direction in order (a FIN, as a close
        /// does) and forward nothing more that way: over TLS, an end without close_notify.
        case end(after: Int, direction: Direction)
        /// Flip the bits of the byte after the first `after` in `direction`, and forward
        /// everything else unchanged: over TLS, a record that fails its integrity check.
        case corrupt(after: Int, direction: Direction)
    }

    /// Counters since the proxy started.
    public struct Statistics: Sendable, Equatable {
        /// Connections accepted.
        public var connections = 0
        /// Bytes forwarded from clients to the target.
        public var requestBytes = 0
        /// Bytes forwarded from the target to clients.
        public var responseBytes = 0
        /// Connections reset by a ``Fault/cut(after:direction:)``.
        public var cuts = 0
        /// Connections stalled by a ``Fault/stall(after:direction:)``.
        public var stalls = 0
        /// Connections ended by a ``Fault/end(after:direction:)``.
        public var ends = 0
    }

    /// The proxy's own (ephemeral) port on 127.0.0.1.
    public let port: UInt16
    /// The port on 127.0.0.1 that connections are forwarded to.
    public let targetPort: UInt16
    private let relay: ProxyRelay

    /// Starts listening on 127.0.0.1 at an ephemeral port, forwarding to 127.0.0.1:`targetPort`.
    public init(targetPort: UInt16) throws(TestSupportError) {
        switch LoopbackSocket.listen() {
        case .success(let listener):
            port = listener.port
            self.targetPort = targetPort
            relay = ProxyRelay(listener: listener.fd, targetPort: targetPort)
            relay.start()
        case .failure(let error):
            throw TestSupportError("FaultProxy cannot listen on 127.0.0.1: \(error.text)")
        }
    }

    deinit {
        relay.stop()
    }

    /// Appends `faults` to the plan: the next accepted connections take them in order.
    public func plan(_ faults: [Fault]) {
        relay.append(faults)
    }

    /// Plans, for each of the next connections in turn, a reset after it has forwarded that
    /// many response bytes to the client.
    public func cutAfter(bytes counts: [Int]) {
        plan(counts.map { .cut(after: $0, direction: .response) })
    }

    /// The counters so far.
    public var statistics: Statistics {
        relay.statistics
    }

    /// `url` with its host and port replaced by the proxy's, so a request meant for the
    /// target goes through the proxy. Servers that build absolute URLs from the Host header
    /// (tus Location) then point back at the proxy too.
    public func url(for url: URL) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: true)!
        components.host = "127.0.0.1"
        components.port = Int(port)
        return components.url!
    }

    /// Stops accepting, resets every open connection and waits for the relay threads to end.
    /// Calling it again does nothing more.
    public func stop() {
        relay.stop()
    }
}

/// The listener and per-connection threads behind a ``FaultProxy``, kept separate so that
/// the threads never keep the public object alive and its deinit can stop them.
private final class ProxyRelay: Sendable {
    private struct State {
        var plan: [FaultProxy.Fault] = []
        var statistics = FaultProxy.Statistics()
        var stopping = false
    }

    private let listener: Int32
    private let targetPort: UInt16
    private let state = LockedValue(State())
    private let threads = DispatchGroup()

    init(listener: Int32, targetPort: UInt16) {
        self.listener = listener
        self.targetPort = targetPort
    }

    var statistics: FaultProxy.Statistics {
        state.withLock { $0.statistics }
    }

    var isStopping: Bool {
        state.withLock { $0.stopping }
    }

    func append(_ faults: [FaultProxy.Fault]) {
        state.withLock { $0.plan.append(contentsOf: faults) }
    }

    func count(_ update: (inout FaultProxy.Statistics) -> Void) {
        state.withLock { update(&$0.statistics) }
    }

    func start() {
        threads.enter()
        Thread.detachNewThread { [self] in
            acceptLoop()
            threads.leave()
        }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        threads.wait()
    }

    private func acceptLoop() {
        var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        while !isStopping {
            descriptor.revents = 0
            // A short timeout is how stop() reaches a thread blocked waiting for clients.
            guard poll(&descriptor, 1, 50) == 1, let client = LoopbackSocket.accept(listener) else { continue }
            let fault = state.withLock { state -> FaultProxy.Fault in
                state.statistics.connections += 1
                return state.plan.isEmpty ? .none : state.plan.removeFirst()
            }
            threads.enter()
            Thread.detachNewThread { [self] in
                serve(client: client, fault: fault)
                threads.leave()
            }
        }
        close(listener)
    }

    private func serve(client: Int32, fault: FaultProxy.Fault) {
        guard case .success(let server) = LoopbackSocket.connect(port: targetPort, timeout: 5) else {
            LoopbackSocket.closeAbruptly(client)
            return
        }
        var connection = RelayedConnection(client: client, server: server, fault: fault, relay: self)
        if connection.run() {
            close(client)
            close(server)
        } else {
            LoopbackSocket.closeAbruptly(client)
            LoopbackSocket.closeAbruptly(server)
        }
    }
}

/// One proxied connection, confined to its relay thread: a poll loop moving bytes both ways
/// through non-blocking sockets and applying the connection's fault.
private struct RelayedConnection {
    private let client: Int32
    private let server: Int32
    private let relay: ProxyRelay
    private var upstream: Flow
    private var downstream: Flow

    init(client: Int32, server: Int32, fault: FaultProxy.Fault, relay: ProxyRelay) {
        self.client = client
        self.server = server
        self.relay = relay
        upstream = Flow(source: client, destination: server, direction: .request, fault: fault)
        downstream = Flow(source: server, destination: client, direction: .response, fault: fault)
    }

    /// Relays until both sides have finished (true) or the connection must be reset (false).
    mutating func run() -> Bool {
        defer {
            upstream.release()
            downstream.release()
        }
        while !relay.isStopping {
            if upstream.isFinished && downstream.isFinished { return true }
            let stalled = upstream.isStalled || downstream.isStalled
            // A stalled connection reads nothing from the client; only its leaving matters.
            let clientEvents = (upstream.wantsInput ? POLLIN : 0) | (downstream.hasPending ? POLLOUT : 0)
                | (stalled ? readHangUp : 0)
            let serverEvents = (downstream.wantsInput ? POLLIN : 0) | (upstream.hasPending ? POLLOUT : 0)
            // Descriptors with nothing to wait for are left out, so a peer's hang-up cannot
            // make poll return at once forever.
            var descriptors = [
                pollfd(fd: clientEvents == 0 ? -1 : client, events: Int16(clientEvents), revents: 0),
                pollfd(fd: serverEvents == 0 ? -1 : server, events: Int16(serverEvents), revents: 0),
            ]
            guard poll(&descriptors, 2, 50) > 0 else { continue }
            let clientReport = Int32(descriptors[0].revents)
            if stalled && clientReport & (readHangUp | POLLHUP | POLLERR) != 0 { return false }
            if clientReport & POLLNVAL != 0 || Int32(descriptors[1].revents) & POLLNVAL != 0 { return false }
            if !upstream.receive(when: clientReport) || !downstream.receive(when: Int32(descriptors[1].revents)) {
                return false
            }
            for direction in [FaultProxy.Direction.request, .response] {
                let outcome = direction == .request ? upstream.send() : downstream.send()
                guard outcome.sent > 0 || outcome.event != .none else { continue }
                relay.count {
                    if direction == .request { $0.requestBytes += outcome.sent } else { $0.responseBytes += outcome.sent }
                    if outcome.event == .stalled { $0.stalls += 1 }
                    if outcome.event == .cut { $0.cuts += 1 }
                    if outcome.event == .ended { $0.ends += 1 }
                }
                if outcome.event == .cut || outcome.event == .failed { return false }
            }
        }
        return false
    }
}

/// `POLLRDHUP` (peer shut down its sending side), which Glibc's Swift overlay does not export.
private let readHangUp: Int32 = 0x2000

/// Bytes moving one way through a relayed connection.
private struct Flow {
    enum Event {
        case none, stalled, cut, ended, failed
    }

    /// Bytes delivered by one ``send()`` and what happened after them.
    struct SendOutcome {
        var sent = 0
        var event = Event.none
    }

    let source: Int32
    let destination: Int32
    /// Bytes after which `fault` acts on this flow, or nil when it never does.
    private let limit: Int?
    /// What happens at `limit`.
    private let atLimit: Event
    /// The count of bytes forwarded before the one to corrupt, if any.
    private var corruptAt: Int?
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    private var start = 0
    private var end = 0
    private var forwarded = 0
    private var sourceEnded = false
    private var destinationShut = false
    private(set) var isStalled = false

    init(source: Int32, destination: Int32, direction: FaultProxy.Direction, fault: FaultProxy.Fault) {
        self.source = source
        self.destination = destination
        switch fault {
        case .cut(let after, direction):
            limit = max(0, after)
            atLimit = .cut
        case .stall(let after, direction):
            limit = max(0, after)
            atLimit = .stalled
        case .end(let after, direction):
            limit = max(0, after)
            atLimit = .ended
        case .corrupt(let after, direction):
            limit = nil
            atLimit = .none
            corruptAt = max(0, after)
        default:
            limit = nil
            atLimit = .none
        }
    }

    var hasPending: Bool { end > start }
    var wantsInput: Bool { !hasPending && !sourceEnded && !isStalled }
    /// The source ended and everything it sent was delivered (and the end passed on).
    var isFinished: Bool { sourceEnded && !hasPending && destinationShut }

    func release() {
        buffer.deallocate()
    }

    /// Reads what the source has if poll reported it readable; false on a read error.
    mutating func receive(when report: Int32) -> Bool {
        guard wantsInput, report & (POLLIN | POLLHUP | POLLERR) != 0 else { return true }
        let count = recv(source, buffer.baseAddress, buffer.count, 0)
        if count > 0 {
            start = 0
            end = count
        } else if count == 0 {
            sourceEnded = true
        } else if errno != EAGAIN && errno != EINTR {
            return false
        }
        return true
    }

    /// Forwards what can be forwarded now, applying the fault at its byte count.
    mutating func send() -> SendOutcome {
        var outcome = SendOutcome()
        if hasPending {
            let allowed = min(end - start, limit.map { $0 - forwarded } ?? Int.max)
            if let at = corruptAt, at >= forwarded, at < forwarded + allowed {
                buffer[start + at - forwarded] ^= 0xFF
                corruptAt = nil
            }
            if allowed > 0 {
                let count = Glibc.send(destination, buffer.baseAddress! + start, allowed, Int32(MSG_NOSIGNAL))
                if count < 0 && errno != EAGAIN && errno != EINTR {
                    outcome.event = .failed
                    return outcome
                }
                if count > 0 {
                    start += count
                    forwarded += count
                    outcome.sent = count
                }
            }
            if hasPending, let limit, forwarded == limit {
                if atLimit == .cut {
                    outcome.event = .cut
                    return outcome
                }
                if atLimit == .ended {
                    shutdown(destination, Int32(SHUT_WR))
                    destinationShut = true
                }
                isStalled = true
                start = end
                outcome.event = atLimit
                return outcome
            }
        }
        if sourceEnded && !hasPending && !destinationShut {
            // Pass the end of this direction on, as the source did, keeping the other open.
            shutdown(destination, Int32(SHUT_WR))
            destinationShut = true
        }
        return outcome
    }
}
