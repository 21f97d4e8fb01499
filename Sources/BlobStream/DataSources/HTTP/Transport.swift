import Foundation

/// How the package's HTTP clients (``HTTPDataSource``, and the upload clients of BlobUpload)
/// talk to a server: one choice for all of them.
public enum Transport: Sendable, Hashable {
    /// `http:` over a plain TCP connection of the package's own HTTP/1.1 client: a download
    /// truly pauses (TCP flow control, bounded memory, no shared queue, curl-like speed), and
    /// an upload writes each chunk straight from its buffer (a fraction of URLSession's CPU
    /// time). `https:` goes through URLSession, which brings TLS.
    case automatic
    /// Every request through URLSession, `http:` too. On Linux it cannot pause a download, so
    /// the HTTP source asks for bounded ranges no larger than its free buffer; and a
    /// synchronous read must not wait on URLSession's own queue (see
    /// ``HTTPDataSource/reasonWaitingWouldDeadlock()``).
    case urlSession

    /// Whether a request to `url` goes over the package's own HTTP/1.1 client: plain `http:`
    /// with ``automatic``; everything else goes through URLSession. The one rule every client
    /// of the package applies.
    package func usesOwnClient(for url: URL) -> Bool {
        self == .automatic && url.scheme?.lowercased() == "http"
    }
}
