import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import HTTP1

/// One `GET` of a byte range of a blob: where, which bytes, which version, and the caller's
/// extra header fields. Both transports turn it into their own request.
struct HTTPRangeRequest: Sendable {
    /// Fields that always carry credentials: never sent to an origin other than the one they
    /// were meant for (after a redirect to another scheme, host or port).
    static let credentialFields: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The URL to ask (after redirects, the URL redirected to).
    var url: URL
    /// The first byte wanted.
    var first: Int64
    /// One past the last byte wanted, or `nil` for "to the end of the blob".
    var end: Int64?
    /// The pinned strong validator for `If-Range` (see ``HTTPBlobVersion/ifRangeValue``), or `nil`
    /// before the first response or when the pinned version has none.
    var validator: String?
    /// The caller's header fields, minus the reserved ones.
    var extraFields: [(String, String)]
    /// The lowercased names of the fields that carry credentials: ``credentialFields`` and the
    /// caller's.
    var credentials: Set<String>
    /// Asked for more fields before the request is sent (``HTTPDataSource/Configuration/headerProvider``);
    /// dropped, like every credential, by a redirect to another origin.
    var headerProvider: HeaderProvider?

    /// A request from `first` to the end, unpinned: the transfer that sends it sets ``end`` and
    /// ``validator`` for what it may buffer and what was pinned.
    init(url: URL, first: Int64, extraFields: [String: String], credentialFields: Set<String>) {
        credentials = Self.credentialFields.union(credentialFields.map { $0.lowercased() })
        self.url = url
        self.first = first
        end = nil
        validator = nil
        self.extraFields = extraFields
            .filter { !HTTPFieldOwner.download.owns($0.key) }
            .sorted { $0.key < $1.key }
    }

    /// The `Range` header value.
    var rangeValue: String {
        end.map { "bytes=\(first)-\($0 - 1)" } ?? "bytes=\(first)-"
    }

    /// Every header field of the request, except `Host` and `Connection`.
    var headerFields: [(String, String)] {
        var fields = [("Range", rangeValue), ("Accept-Encoding", "identity")]
        if let validator { fields.append(("If-Range", validator)) }
        return fields + extraFields
    }

    /// The same request sent to `location` after a redirect. Credentials are dropped when the
    /// redirect leaves the origin (scheme, host and port) they were given for.
    func redirected(to location: URL) -> HTTPRangeRequest {
        var next = self
        next.url = location
        if URLOrigin(url) != URLOrigin(location) {
            next.extraFields.removeAll { credentials.contains($0.0.lowercased()) }
            next.headerProvider = nil
        }
        return next
    }

    /// Why `fields` cannot be sent (a name that is not a token, a value with a line break), or
    /// `nil` when they can: the one check of ``HTTPFieldCheck``, for both transports.
    static func problem(in fields: [String: String]) -> String? {
        switch HTTPFieldCheck.firstProblem(in: fields) {
        case nil: nil
        case (let name, .name)?: "the header name \"\(name)\" is not a valid HTTP token"
        case (let name, .value)?: "the value of header \"\(name)\" contains a line break or NUL"
        case (let name, .method)?: "the method \"\(name)\" is not a valid HTTP token"
        }
    }

    /// The request for URLSession. `timeout` only backs up the data source's own timers.
    func urlRequest(timeout: TimeInterval) -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "GET"
        request.httpShouldHandleCookies = false
        for (name, value) in headerFields { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// The HTTP/1.1 request head for the package's own client. The connection is kept alive
    /// (pooled) only after an answer read to the end its framing declares, with nothing after it.
    var requestHead: HTTPRequestHead {
        requestHead(adding: [:])
    }

    /// ``requestHead`` with `provided` fields (a header provider's) replacing the caller's of
    /// the same name; reserved ones are left out, as the caller's are.
    func requestHead(adding provided: [String: String]) -> HTTPRequestHead {
        let added = provided.filter { !HTTPFieldOwner.download.owns($0.key) }.sorted { $0.key < $1.key }
        let names = Set(added.map { $0.key.lowercased() })
        let fields = headerFields.filter { !names.contains($0.0.lowercased()) } + added.map { ($0.key, $0.value) }
        return HTTPRequestHead(method: "GET", url: url, fields: [("User-Agent", "BlobStream"), ("Accept", "*/*")] + fields)
    }
}
