import Foundation

extension HTTPDataSource {
    /// How an ``HTTPDataSource`` talks to the server: ``BlobTransport/Transport``.
    public typealias Transport = BlobTransport.Transport

    /// The settings of an ``HTTPDataSource``. The defaults suit a blob of any size on a healthy
    /// network: 4 MiB read-ahead, a minute for a response, 30 s of silence, at least 1 KiB/s
    /// over 30 s, 5 reconnects.
    public struct Configuration: Sendable {
        /// Header fields added to every request, for example `Authorization`. `Range`,
        /// `If-Range`, `Accept-Encoding`, `Host` and `Connection` are the source's own and are
        /// ignored here. `Authorization`, `Proxy-Authorization` and `Cookie`, and those named in
        /// ``credentialHeaders``, are not sent after a redirect to another scheme, host or port.
        public var headers: [String: String]

        /// Names (any case) of further fields in ``headers`` that carry credentials, such as
        /// `X-API-Key`: like `Authorization`, they are sent only to the origin (scheme, host and
        /// port) of the URL, never after a redirect to another.
        public var credentialHeaders: Set<String>

        /// The most bytes downloaded ahead of the reader (at least 16 KiB). When they are
        /// buffered the download pauses, and it resumes once the reader has consumed half.
        public var readAheadLimit: Int

        /// The longest wait, in seconds, from sending a request (connecting included) to the
        /// complete response head.
        public var requestTimeout: TimeInterval

        /// The longest silence, in seconds, while a response body is arriving. Time spent paused
        /// because the buffer is full does not count.
        public var idleTimeout: TimeInterval

        /// The slowest a response body may arrive (``MinimumSpeed/standard``, 1 KiB/s over
        /// 30 s, by default): a server that sends one byte at a time, which ``idleTimeout``
        /// never ends, fails the request with ``BlobStreamError/timedOut(resource:operation:seconds:)``
        /// naming the offset and the rate, and the source reconnects as after any time-out.
        /// Time paused because the buffer is full does not count. Both transports apply it.
        public var minimumSpeed: MinimumSpeed

        /// How many times in a row the source reconnects after a dropped connection, a short body,
        /// a timeout or a status that says to ask again later (408, 429, a 5xx but 501 and 505)
        /// before it gives up with the last error. Progress resets the count, but for
        /// attempts that failed below ``minimumSpeed``: those count until the next open or seek.
        public var maxRetries: Int

        /// The wait before the first reconnect, in seconds; it doubles with each further attempt.
        public var retryDelay: TimeInterval

        /// Which transport carries the requests.
        public var transport: Transport

        /// Called before each request (reconnects and seeks included) for fields to add to
        /// ``headers``, a fresh token for instance, and once more when the server refuses one with
        /// 401 or 403, which is then sent once more (see ``HeaderProvider``). Its fields are
        /// credentials: never sent after a redirect to another origin, where it is not asked.
        /// On the package's own client (``Transport/automatic``); through URLSession it is not
        /// called. The transfer's thread waits for it. `nil` by default.
        public var headerProvider: HeaderProvider?

        /// Told of each reconnect before its wait begins (what failed, at which offset; which
        /// attempt comes; how long the wait is), so a long run of retries is not silence: a
        /// command line prints them. Called on the source's threads, without its lock; it must
        /// return quickly. `nil` by default.
        public var retryObserver: (@Sendable (Retry) -> Void)?

        /// Creates a configuration; every parameter has the default described on its property.
        public init(
            headers: [String: String] = [:],
            credentialHeaders: Set<String> = [],
            readAheadLimit: Int = 4 * 1024 * 1024,
            requestTimeout: TimeInterval = 60,
            idleTimeout: TimeInterval = 30,
            minimumSpeed: MinimumSpeed = .standard,
            maxRetries: Int = 5,
            retryDelay: TimeInterval = 0.1,
            transport: Transport = .automatic,
            headerProvider: HeaderProvider? = nil
        ) {
            self.headers = headers
            self.credentialHeaders = credentialHeaders
            self.readAheadLimit = readAheadLimit
            self.requestTimeout = requestTimeout
            self.idleTimeout = idleTimeout
            self.minimumSpeed = minimumSpeed
            self.maxRetries = maxRetries
            self.retryDelay = retryDelay
            self.transport = transport
            self.headerProvider = headerProvider
        }
    }

    /// A reconnect about to be made, for ``Configuration/retryObserver``.
    public struct Retry: Sendable, Hashable {
        /// Why the last attempt failed, naming the URL and the offset.
        public var error: BlobStreamError
        /// The attempt that comes after the wait: 2 for the first retry.
        public var attempt: Int
        /// The most attempts there are: ``Configuration/maxRetries`` + 1.
        public var attempts: Int
        /// The wait before it, in seconds.
        public var delay: TimeInterval
    }

    /// What the source has done so far, for diagnostics and tests.
    struct Statistics: Sendable, Hashable {
        /// Requests sent, redirects followed included.
        var requests = 0
        /// Requests sent again after a dropped connection, a short body or a timeout.
        var reconnects = 0
        /// Body bytes received from the network, including any skipped because the server
        /// ignored a range.
        var bytesReceived: Int64 = 0
        /// Bytes downloaded but not yet read, now.
        var bufferedBytes = 0
    }
}
