import Foundation

/// The head of one HTTP/1.1 request: method, target, `Host` and header fields, written as
/// bytes. Fields are checked by ``HTTPFieldCheck`` first, so nothing is written that a server
/// could read as more (or other) fields than were meant.
package struct HTTPRequestHead: Sendable {
    /// E.g. "GET".
    package var method: String
    /// The `http:` URL asked; its path and query become the request target, its host and port
    /// the `Host` field.
    package var url: URL
    /// Header fields in the order written; `Host` and the framing fields the writer sets
    /// (`Content-Length`, `Transfer-Encoding`, `Connection`) are skipped here.
    package var fields: [(String, String)]
    /// The `Content-Length` to announce, or `nil` for a request without a body (or a chunked one).
    package var contentLength: Int?
    /// Whether the body follows in the chunked transfer coding: a body whose length is not
    /// known up front, and which the server takes as complete only once its last chunk came, so
    /// a sender that stops early can never leave a short body looking whole.
    package var isChunked = false
    /// Whether to ask the server to close the connection after its answer.
    package var closeAfterAnswer: Bool

    /// A head for `method` on `url`.
    package init(method: String, url: URL, fields: [(String, String)], contentLength: Int? = nil, closeAfterAnswer: Bool = false) {
        self.method = method
        self.url = url
        self.fields = fields
        self.contentLength = contentLength
        self.closeAfterAnswer = closeAfterAnswer
    }

    /// A head for `method` on `url` with a caller's `fields`, checked here, by the package's
    /// one check (``HTTPFieldCheck``), before any transport sees them; then `setting`, which
    /// replace a caller's field of the same name in any case. The fields are one
    /// case-insensitive set, as `URLRequest` keeps them, written in name order.
    /// - Throws: a method that is not a token, or the first unusable field in name order;
    ///   nothing is built then.
    package init(
        method: String, url: URL, checking fields: [String: String], setting: [(String, String)] = []
    ) throws(HTTPFieldCheck.Failure) {
        guard HTTPFieldCheck.isToken(method) else { throw HTTPFieldCheck.Failure(name: method, problem: .method) }
        var merged = fields.map { ($0.key, $0.value) }
        for (name, value) in setting {
            merged.removeAll { $0.0.lowercased() == name.lowercased() }
            merged.append((name, value))
        }
        if let (name, problem) = HTTPFieldCheck.firstProblem(in: merged.map { (key: $0.0, value: $0.1) }) {
            throw HTTPFieldCheck.Failure(name: name, problem: problem)
        }
        self.init(method: method, url: url, fields: merged.sorted { $0.0 < $1.0 })
    }

    /// Where to connect: the host, the port (the scheme's default when the URL names none) and
    /// TLS for `https:`; `nil` when the URL is not `http:` or `https:` with a host and a usable
    /// port (``URLOrigin/usablePort(of:)``).
    package var endpoint: HTTP1Endpoint? {
        let scheme = url.scheme?.lowercased()
        guard scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty,
              let port = URLOrigin.usablePort(of: url) else { return nil }
        return HTTP1Endpoint(host: Self.unbracketed(host), port: port, isSecure: scheme == "https")
    }

    /// `host` without the brackets of an IPv6 literal, which `URL.host` keeps on Linux.
    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// The method or first field that cannot be written, and why, or `nil`: the one check
    /// (``HTTPFieldCheck``) for a head whose fields were set without
    /// ``init(method:url:checking:setting:)``, to be asked before ``serialized()``.
    package var fieldProblem: (name: String, problem: HTTPFieldCheck.Problem)? {
        guard HTTPFieldCheck.isToken(method) else { return (method, .method) }
        return HTTPFieldCheck.firstProblem(in: fields.map { (key: $0.0, value: $0.1) })
    }

    /// The bytes of the head, up to and including the blank line. The fields are written as
    /// they are: a head with a caller's fields is built by the checking initializer, or asked
    /// for its ``fieldProblem`` first.
    package func serialized() -> [UInt8] {
        var target = "/"
        if let components = URLComponents(url: url, resolvingAgainstBaseURL: true) {
            target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
            if let query = components.percentEncodedQuery { target += "?" + query }
        }
        var host = url.host ?? ""
        if host.contains(":") { host = "[\(host)]" }
        if let port = url.port { host += ":\(port)" }
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        if isChunked {
            text += "Transfer-Encoding: chunked\r\n"
        } else if let contentLength {
            text += "Content-Length: \(contentLength)\r\n"
        }
        // The writer's own fields (``HTTPFieldOwner/http``) are not taken from the caller.
        for (name, value) in fields where !HTTPFieldOwner.http.owns(name) {
            text += "\(name): \(value)\r\n"
        }
        if closeAfterAnswer { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
