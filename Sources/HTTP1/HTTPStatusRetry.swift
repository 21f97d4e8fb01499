/// What a status says about sending the same request again: the one rule every client of the
/// package retries by (the HTTP source, tus, which adds its own statuses on top).
package enum HTTPStatusRetry {
    /// Whether `status` says the same request may pass later: a request time-out (408),
    /// throttling (429), a server error (5xx) — but 501 Not Implemented and 505 HTTP Version
    /// Not Supported, which say the server never will.
    package static func asksAgainLater(_ status: Int) -> Bool {
        (status >= 500 && status <= 599 && status != 501 && status != 505) || status == 408 || status == 429
    }
}
