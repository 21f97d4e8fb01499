import Foundation

/// The check for URLs a command sends requests to (`put`'s target, `upload`'s endpoint
/// and `--resume`): an absolute `http:` or `https:` URL with a host. Anything else is refused
/// before a request is made, so a typo never turns into retries or a confusing network error.
enum HTTPURLArgument {
    /// The URL `text` names.
    /// - Parameter role: What the URL is for, in the message: `"a tus endpoint"`.
    /// - Throws: ``CommandFailure/usage(_:)`` naming `text` when it is not an http(s) URL.
    static func parse(_ text: String, role: String) throws(CommandFailure) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw .usage("'\(text)' is not an http:// or https:// URL of \(role)")
        }
        return url
    }
}
