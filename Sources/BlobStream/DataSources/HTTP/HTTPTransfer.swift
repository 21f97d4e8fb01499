import Foundation
internal import HTTP1

/// One HTTP range request in flight, on either transport. Created by the read-ahead of an
/// ``HTTPDataSource``, which receives its events through an ``HTTPTransferSink``.
protocol HTTPTransfer: AnyObject, Sendable {
    /// Sends the request. Events follow on the transport's own thread or queue.
    func start()
    /// Stops the transfer. No further events matter; any that still arrive are ignored by the
    /// sink, which compares transfer identifiers.
    func cancel()
}

/// Why a transfer ended without its whole body.
enum HTTPTransferFailure: Error, Sendable, Equatable {
    /// No progress within a timeout while `operation` (connecting, waiting for the response,
    /// waiting for body bytes). Retried like a dropped connection.
    case timedOut(operation: String, seconds: Double)
    /// The body came slower than the minimum speed for `seconds` while `operation` (which
    /// names the rate). Retried, but the progress such an attempt makes does not reset the
    /// count of retries: a peer that trickles cannot hold the source by making a little
    /// progress on each attempt.
    case tooSlow(operation: String, seconds: Double)
    /// The connection could not be made or broke (refused, reset, closed before the announced
    /// end of the body). Retried.
    case connection(reason: String)
    /// The server broke HTTP (a malformed head or chunk framing), and asking again will not
    /// help. Not retried.
    case protocolViolation(reason: String)
    /// The exchange cannot succeed for another reason than the server's HTTP (TLS trust, a URL
    /// URLSession refuses, too many redirects). Not retried.
    case unusable(reason: String)
    /// The server answered `code`, a status that says to ask again later
    /// (``HTTPStatusRetry/asksAgainLater(_:)``: a time-out, throttling such as S3's 503 Slow
    /// Down, an overloaded or restarting server or gateway), and named in `Retry-After` how
    /// many seconds to wait, if it did. Retried, waiting at least that long.
    case status(code: Int, retryAfter: TimeInterval?)

    /// The longest `Retry-After` waited for, in seconds (the longest reconnect delay): a server
    /// that asks for longer is not asked again, and its status is the error.
    static let maxRetryAfter: TimeInterval = 30

    /// The failure to retry for an answer of `code` whose `Retry-After` field is `retryAfter`
    /// and `Date` field `date`, or `nil` when the status is final: not transient, or to be
    /// asked again only after more than ``maxRetryAfter`` seconds. `Retry-After` is seconds, or
    /// an HTTP date, counted from the answer's `Date` (else from now), so that clocks that
    /// differ do not matter; anything else in it counts as absent.
    static func transient(status code: Int, retryAfter: String?, date: String?) -> HTTPTransferFailure? {
        guard HTTPStatusRetry.asksAgainLater(code) else { return nil }
        var seconds: TimeInterval?
        if let field = retryAfter?.trimmingCharacters(in: .whitespaces) {
            if !field.isEmpty, field.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
                // Digits too many for an Int are a wait longer than any limit.
                seconds = Int(field).map(TimeInterval.init) ?? .infinity
            } else if let delta = Int(field) {
                seconds = TimeInterval(delta)
            } else if let then = HTTPBlobVersion.seconds(inHTTPDate: field) {
                let now = date.flatMap(HTTPBlobVersion.seconds(inHTTPDate:)) ?? Int64(Date().timeIntervalSince1970)
                seconds = TimeInterval(then - now)
            }
        }
        if let seconds, seconds > maxRetryAfter { return nil }
        return .status(code: code, retryAfter: seconds.map { max(0, $0) })
    }

    /// Whether asking again, from where the data stopped, may succeed.
    var isRetryable: Bool {
        switch self {
        case .timedOut, .tooSlow, .connection, .status: return true
        case .protocolViolation, .unusable: return false
        }
    }
}

/// What a transfer reports to, and asks of, the read-ahead that started it. Every call names the
/// transfer by the identifier the read-ahead gave it, so events of a transfer it has abandoned
/// are recognised and refused.
protocol HTTPTransferSink: AnyObject, Sendable {
    /// The final response head arrived (redirects already followed or reported). Returns whether
    /// the transfer should read the body.
    func transfer(_ id: Int, didReceive head: HTTPResponseHead) -> Bool

    /// How many bytes the transfer may deliver next. Only transports that can leave bytes in the
    /// kernel ask (the socket transport): this is how the download pauses while the buffer is
    /// full. With `inPlace` (a body whose bytes are all payload), the answer may be a
    /// ``HTTPTransferSpace/loan(_:)`` to receive into; the transfer must then report what it
    /// received there with ``transfer(_:received:into:)``, also after a failed receive (0).
    func transferSpace(_ id: Int, inPlace: Bool) -> HTTPTransferSpace

    /// The transfer received `count` body bytes at the start of `loan` (0 when the receive
    /// failed) and returns it. Returns whether the transfer should go on.
    func transfer(_ id: Int, received count: Int, into loan: ReadAheadBuffer.Loan) -> Bool

    /// Body bytes arrived. Returns whether the transfer should go on.
    func transfer(_ id: Int, didReceive bytes: UnsafeRawBufferPointer) -> Bool

    /// The server redirected (`statusCode`) to `location`, the `Location` field as sent. The
    /// transfer ends here (on either transport) and the sink decides whether to follow, by
    /// ``HTTPRedirectPolicy/download``.
    func transfer(_ id: Int, redirectedTo location: String, statusCode: Int)

    /// The transfer ended: the body is complete (`nil`), or `failure`.
    func transfer(_ id: Int, didFinishWith failure: HTTPTransferFailure?)
}

/// The answer to ``HTTPTransferSink/transferSpace(_:)``.
enum HTTPTransferSpace: Sendable {
    /// Deliver at most this many bytes (more than zero).
    case bytes(Int)
    /// Receive into these bytes of the buffer itself, then report them.
    case loan(ReadAheadBuffer.Loan)
    /// The buffer is full: wait for the semaphore, which the sink signals once there is room or
    /// the transfer is cancelled, then ask again.
    case wait(DispatchSemaphore)
    /// Stop: the transfer was cancelled or replaced.
    case stop
}
