import Foundation

/// Header fields computed for each request, just before it is sent, retries included: how a
/// client sends a bearer token that expires during a long transfer. Given to `TusClient`,
/// `StreamedUploader` and `HTTPDataSource.Configuration.headerProvider`.
///
/// When the server refuses a request with 401 or 403, the provider is called once more for
/// it, with ``HeaderRequest/refusedStatus`` set (refresh the token now), and that request is
/// sent once more with the new fields; a second refusal is the request's answer. Its fields
/// go only where the client's static headers go, the origin they were given for.
///
/// The provider runs on the task or thread of the transfer, which waits for it: keep it short
/// (a cached token, refreshed when it nears its expiry or on ``HeaderRequest/refusedStatus``).
public typealias HeaderProvider = @Sendable (HeaderRequest) async -> [String: String]

/// A request about to be sent, as a ``HeaderProvider`` sees it.
public struct HeaderRequest: Sendable, Hashable {
    /// Its method (`PATCH`, `GET`).
    public var method: String
    /// Where it goes.
    public var url: URL
    /// The status (401 or 403) with which the server refused this request just before: the
    /// credentials are stale and should be renewed. `nil` for a request's first try.
    public var refusedStatus: Int?

    /// A request's description.
    public init(method: String, url: URL, refusedStatus: Int? = nil) {
        self.method = method
        self.url = url
        self.refusedStatus = refusedStatus
    }

    /// The statuses that make a client ask its provider again and retry once: 401 and 403.
    public static let refreshingStatuses: Set<Int> = [401, 403]

    /// The rule every client follows after the server answered this request with `status`:
    /// the request to ask the provider for once more (``refusedStatus`` set) when this was its
    /// first try and `status` is 401 or 403; `nil` otherwise, and a second refusal is the
    /// request's answer.
    public func renewal(after status: Int) -> HeaderRequest? {
        guard refusedStatus == nil, Self.refreshingStatuses.contains(status) else { return nil }
        var again = self
        again.refusedStatus = status
        return again
    }
}
