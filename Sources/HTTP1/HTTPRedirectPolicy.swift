import Foundation

/// The one redirect rule of the package's clients: which redirects a request follows, where to,
/// and why it refuses the others. Every client applies it, whatever carries its requests (the
/// HTTP source's range requests on either transport, tus and the streamed PUT on either
/// transport, S3): only the loop that re-sends differs.
///
/// Never followed, by any client: a `Location` that is no `http:`/`https:` URL, a redirect from
/// `https:` to `http:` (a redirect never leaves TLS), a redirect of a request whose body cannot
/// be sent again, and more than ``limit`` redirects in a row.
package struct HTTPRedirectPolicy: Sendable {
    /// How far a redirect may lead.
    package enum Reach: Sendable {
        /// Any `http:`/`https:` URL; the caller drops its credentials when the origin changes
        /// (a signed download link that redirects to a CDN).
        case anyOrigin
        /// The request's origin only: the request's header fields, credentials among them, are
        /// meant for it (FoundationNetworking would send every one of them along).
        case sameOrigin
        /// The same origin, path and query: another path or query is another object or
        /// operation (S3: an `UploadPart` without its query is a `PutObject`).
        case sameResource
    }

    /// How far a redirect may lead.
    package var reach: Reach
    /// The most redirects followed in a row for one request.
    package var limit: Int

    /// Range requests of the HTTP source: any origin, credentials dropped on leaving it.
    package static let download = HTTPRedirectPolicy(reach: .anyOrigin, limit: 16)
    /// Upload requests (tus, the streamed PUT): within the origin, as many as URLSession follows.
    package static let upload = HTTPRedirectPolicy(reach: .sameOrigin, limit: 16)
    /// S3 requests: the same resource only (a load balancer moving the connection).
    package static let s3 = HTTPRedirectPolicy(reach: .sameResource, limit: 2)

    /// A redirect to follow.
    package struct Follow: Sendable, Equatable {
        /// Where to send the request again.
        package var url: URL
        /// The method to send it with: `GET` after a See Other (303), as browsers and
        /// URLSession do, unless it was a `HEAD`; the request's own otherwise.
        package var method: String
    }

    /// Why a redirect is not followed.
    package enum Refusal: Error, Sendable, Equatable {
        /// The `Location` is not a URL.
        case invalidLocation(String)
        /// The target is not `http:` or `https:`.
        case notHTTP(URL)
        /// The target is `http:`, the request `https:`.
        case downgrade(URL)
        /// The request has a body that cannot be sent again.
        case body(URL)
        /// The target is in another origin than `allowed` (``Reach/sameOrigin``).
        case otherOrigin(URL, allowed: URLOrigin)
        /// The target is another path, query or method (``Reach/sameResource``).
        case otherResource(URL)
        /// ``HTTPRedirectPolicy/limit`` redirects were followed already.
        case tooMany(URL, limit: Int)

        /// What the answer pointed at.
        package var location: String {
            switch self {
            case .invalidLocation(let text): text
            case .notHTTP(let url), .downgrade(let url), .body(let url), .otherOrigin(let url, _),
                 .otherResource(let url), .tooMany(let url, _): url.absoluteString
            }
        }

        /// Why it was refused, as a message says it after naming the request.
        package var reason: String {
            switch self {
            case .invalidLocation(let text): "redirected to \"\(text)\", which is not a URL"
            case .notHTTP(let url): "redirected to \(url.absoluteString), a scheme other than http and https"
            case .downgrade(let url): "redirected from https to http (\(url.absoluteString)); a redirect never leaves TLS"
            case .body(let url): "redirected to \(url.absoluteString); the body cannot be sent again"
            case .otherOrigin(let url, let allowed): "redirected to \(url.absoluteString), outside \(allowed)"
            case .otherResource(let url):
                "redirected to \(url.absoluteString); a redirect to another path or query is refused (it would be another object or operation)"
            case .tooMany(let url, let limit): "more than \(limit) redirects, the last to \(url.absoluteString)"
            }
        }
    }

    /// The statuses that redirect a request.
    package static let statuses: Set<Int> = [301, 302, 303, 307, 308]

    /// What to do with an answer of `status` with `location` to `method url`, after `followed`
    /// redirects of that request: `nil` when the answer is no redirect (another status, no
    /// `Location`, or a 303 to a request with a body), and is the answer.
    /// - Parameter hasBody: Whether the request carries a body that cannot be sent again.
    package func next(
        method: String, url: URL, hasBody: Bool, status: Int, location: String?, followed: Int
    ) -> Result<Follow, Refusal>? {
        guard Self.statuses.contains(status), let location else { return nil }
        // A 303 to a request with a body is its answer: the server handled the request and
        // points at a result (RFC 9110 §15.4.4), which following would only fetch.
        if hasBody, status == 303 { return nil }
        guard let target = URL(string: location, relativeTo: url)?.absoluteURL, target.host != nil || target.scheme != nil else {
            return .failure(.invalidLocation(location))
        }
        let scheme = target.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else { return .failure(.notHTTP(target)) }
        if url.scheme?.lowercased() == "https", scheme == "http" { return .failure(.downgrade(target)) }
        if hasBody { return .failure(.body(target)) }
        let follow = Follow(url: target, method: status == 303 && method != "HEAD" ? "GET" : method)
        switch reach {
        case .anyOrigin:
            break
        case .sameOrigin:
            guard URLOrigin(target) == URLOrigin(url) else { return .failure(.otherOrigin(target, allowed: URLOrigin(url))) }
        case .sameResource:
            guard URLOrigin(target) == URLOrigin(url) else { return .failure(.otherOrigin(target, allowed: URLOrigin(url))) }
            guard Self.sameResource(target, url), follow.method == method else { return .failure(.otherResource(target)) }
        }
        guard followed < limit else { return .failure(.tooMany(target, limit: limit)) }
        return .success(follow)
    }

    /// Whether two URLs name the same path and query, as sent.
    private static func sameResource(_ a: URL, _ b: URL) -> Bool {
        let parts = { (url: URL) in
            URLComponents(url: url, resolvingAgainstBaseURL: false).map { ($0.percentEncodedPath, $0.percentEncodedQuery) }
        }
        guard let x = parts(a), let y = parts(b) else { return false }
        return x.0 == y.0 && x.1 == y.1
    }
}
