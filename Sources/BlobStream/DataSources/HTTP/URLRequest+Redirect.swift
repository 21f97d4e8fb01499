import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLRequest {
    /// The request FoundationNetworking proposes for the redirect `response`, sent where the
    /// answer's `Location` says, resolved against the URL that answered.
    ///
    /// Why: FoundationNetworking builds the proposed request from the target's `path`, which
    /// drops a trailing slash (`/v2/blob/` became `/v2/blob`, another resource). The HTTP
    /// source and the upload transport both follow redirects through URLSession, so both take
    /// the target from here.
    package func redirected(as response: HTTPURLResponse) -> URLRequest {
        guard let named = response.value(forHTTPHeaderField: "Location")
            .flatMap({ URL(string: $0, relativeTo: response.url ?? url)?.absoluteURL }) else { return self }
        var request = self
        request.url = named
        return request
    }
}

extension URL {
    /// Whether a redirect from this URL to `target` would leave TLS (`https:` to `http:`): a
    /// redirect that no client of the package follows.
    func isDowngraded(to target: URL) -> Bool {
        scheme?.lowercased() == "https" && target.scheme?.lowercased() == "http"
    }
}
