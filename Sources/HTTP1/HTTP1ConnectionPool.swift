import Dispatch
internal import SystemCalls

/// Kept-alive connections, per endpoint (host, port, TLS) and trust, waiting for their next
/// request. A connection is handed out only while ``HTTP1Connection/isReusable``; the others
/// are dropped (closed) on the way.
///
/// The trust is part of the key: a TLS connection verified against one set of authorities
/// (a test CA, `--cacert`) never carries a request that asked for another (the system's store),
/// whose verification it never passed.
package final class HTTP1ConnectionPool: Sendable {
    private struct Key: Hashable {
        var endpoint: HTTP1Endpoint
        var trust: TLSConfiguration
    }

    private struct Idle {
        var connection: HTTP1Connection
        /// When it was put back, in uptime nanoseconds.
        var since: UInt64
    }

    private let idle = LockedValue<[Key: [Idle]]>([:])
    private let limit: Int
    private let totalLimit: Int
    private let maxIdleNanoseconds: UInt64

    /// A pool keeping at most `limit` idle connections per endpoint and `totalLimit` in all
    /// (the least recently used go first), each for at most `maxIdleSeconds`: a process that
    /// reads from many hosts keeps a bounded number of descriptors, and a connection that a
    /// server, load balancer or NAT has long forgotten is not tried (120 s by default, as curl's
    /// 118 s; a server that closed one earlier, as nginx does after 75 s, is seen by
    /// ``HTTP1Connection/isReusable``).
    package init(limit: Int, totalLimit: Int = 32, maxIdleSeconds: Double = 120) {
        self.limit = max(1, limit)
        self.totalLimit = max(self.limit, totalLimit)
        maxIdleNanoseconds = UInt64(max(0, maxIdleSeconds) * 1e9)
    }

    /// An idle connection to `endpoint`, made trusting `trust`, that can carry a request, if
    /// there is one: the one put back last.
    package func take(_ endpoint: HTTP1Endpoint, trust: TLSConfiguration) -> HTTP1Connection? {
        let key = Key(endpoint: endpoint, trust: trust)
        return idle.withLock { idle in
            dropExpired(&idle)
            while let kept = idle[key]?.popLast() {
                if idle[key]?.isEmpty == true { idle[key] = nil }
                if kept.connection.isReusable { return kept.connection }
                kept.connection.close()
            }
            return nil
        }
    }

    /// Keeps `connection` for `endpoint` and the `trust` it was made with, unless it was
    /// cancelled or the endpoint has `limit` already (it is closed then); the least recently
    /// used idle connection of any endpoint makes room when the pool holds `totalLimit`.
    package func put(_ connection: HTTP1Connection, for endpoint: HTTP1Endpoint, trust: TLSConfiguration) {
        guard !connection.isCancelled else { return }
        let key = Key(endpoint: endpoint, trust: trust)
        idle.withLock { idle in
            dropExpired(&idle)
            guard idle[key, default: []].count < limit else {
                connection.close()
                return
            }
            idle[key, default: []].append(Idle(connection: connection, since: DispatchTime.now().uptimeNanoseconds))
            while idle.values.reduce(0, { $0 + $1.count }) > totalLimit, let oldest = Self.oldest(in: idle) {
                idle[oldest]?.removeFirst().connection.close()
                if idle[oldest]?.isEmpty == true { idle[oldest] = nil }
            }
        }
    }

    /// Closes and forgets the connections idle longer than the pool keeps them.
    private func dropExpired(_ idle: inout [Key: [Idle]]) {
        let now = DispatchTime.now().uptimeNanoseconds
        for (key, kept) in idle {
            // Put back in order: the expired ones lead.
            let fresh = kept.firstIndex { now - $0.since <= maxIdleNanoseconds } ?? kept.endIndex
            guard fresh > 0 else { continue }
            kept[..<fresh].forEach { $0.connection.close() }
            idle[key] = fresh == kept.endIndex ? nil : Array(kept[fresh...])
        }
    }

    /// The endpoint whose first (longest idle) connection is the oldest.
    private static func oldest(in idle: [Key: [Idle]]) -> Key? {
        idle.filter { !$0.value.isEmpty }.min { $0.value[0].since < $1.value[0].since }?.key
    }

    /// The idle connections it holds, for tests.
    package var idleCount: Int { idle.withLock { $0.values.reduce(0) { $0 + $1.count } } }
}

/// When a request may go out on a kept-alive connection, and be sent again.
package struct HTTP1ReusePolicy: Sendable {
    /// Whether the request may take an idle connection from the pool.
    package var takesIdle: Bool
    /// Whether the request may be sent again on a new connection when a kept-alive one turns
    /// out to have been closed by the server while it was idle (before any byte of an answer):
    /// never for a request that would make a second resource.
    package var resendsAfterStale: Bool

    /// A policy.
    package init(takesIdle: Bool, resendsAfterStale: Bool) {
        self.takesIdle = takesIdle
        self.resendsAfterStale = resendsAfterStale
    }
}

extension HTTP1ConnectionPool {
    /// The request loop of the package's clients (tus, the streamed PUT's probes, S3):
    /// takes an idle connection to `endpoint` as `policy` allows, or connects a new one (TLS
    /// with `trust` for a secure endpoint) within `connectTimeout`; runs `exchange` on it, with
    /// `cancellation` watching it; pools it again when the answer leaves it reusable; and sends
    /// the request once more on a new connection when a kept-alive one went stale, as `policy`
    /// allows. A failed connection is closed at once.
    /// - Returns: The answer.
    /// - Throws: What `exchange` or the connect threw (``HTTP1Error/cancelled`` once
    ///   `cancellation` is), with how far the exchange got (``HTTP1Progress``).
    package func run<Answer>(
        to endpoint: HTTP1Endpoint, trust: TLSConfiguration, connectTimeout: Double, policy: HTTP1ReusePolicy,
        cancellation: HTTP1Cancellation,
        exchange: (HTTP1Connection) throws(HTTP1Error) -> (answer: Answer, reusable: Bool)
    ) throws(HTTP1RequestFailure) -> Answer {
        var retriedStale = false
        while true {
            if cancellation.isCancelled { throw HTTP1RequestFailure(error: .cancelled, progress: nil) }
            // After a stale connection, a new one: another kept one may be as stale.
            let reused = policy.takesIdle && !retriedStale ? take(endpoint, trust: trust) : nil
            let connection = reused ?? HTTP1Connection()
            guard cancellation.watch(connection) else {
                // Cancelled already: a connection taken from the pool is closed, not leaked.
                connection.close()
                throw HTTP1RequestFailure(error: .cancelled, progress: nil)
            }
            let receivedBefore = connection.bytesReceived
            let sentBefore = connection.bytesSent
            do {
                if reused == nil {
                    try connection.connect(to: endpoint, trust: trust, wait: .after(connectTimeout))
                }
                let (answer, reusable) = try exchange(connection)
                // Unwatched first: a cancellation after this no longer reaches it; one that came
                // before is seen by `put` and by `take`.
                cancellation.unwatch(connection)
                if reusable, !cancellation.isCancelled { put(connection, for: endpoint, trust: trust) }
                return answer
            } catch {
                cancellation.unwatch(connection)
                connection.close()
                if cancellation.isCancelled || error == .cancelled { throw HTTP1RequestFailure(error: .cancelled, progress: nil) }
                if reused != nil, policy.resendsAfterStale, !retriedStale, connection.failedAsStale(error, receivedBefore: receivedBefore) {
                    retriedStale = true
                    continue
                }
                throw HTTP1RequestFailure(error: error, progress: connection.progress(sentSince: sentBefore))
            }
        }
    }
}

/// Why ``HTTP1ConnectionPool/run(to:trust:connectTimeout:policy:cancellation:exchange:)`` gave
/// no answer: the error, and how far the exchange got (for a time-out's message).
package struct HTTP1RequestFailure: Error, Sendable {
    /// The connection's error.
    package var error: HTTP1Error
    /// Where the exchange was when it failed; `nil` when it never began (cancelled).
    package var progress: HTTP1Progress?
}
