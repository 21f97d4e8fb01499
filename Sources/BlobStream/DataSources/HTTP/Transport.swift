import Foundation
internal import HTTP1

/// How the package's HTTP clients (``HTTPDataSource``, and the upload clients of BlobUpload)
/// talk to a server: one choice for all of them.
public struct Transport: Sendable, Hashable {
    private enum Client: Sendable, Hashable {
        case own
        case urlSession
    }

    private let client: Client
    /// The certificate authorities the package's own client trusts for `https:`; URLSession
    /// keeps the system's.
    public let trust: TLSTrust

    /// `http:`, and `https:` where the package has TLS of its own (Linux, with OpenSSL), over a
    /// connection of the package's own HTTP/1.1 client: a download truly pauses (TCP flow
    /// control, bounded memory, no shared queue, curl-like speed), and an upload writes each
    /// chunk straight from its buffer (a fraction of URLSession's CPU time). Certificates are
    /// verified against ``TLSTrust/system``. Elsewhere `https:` goes through URLSession.
    public static let automatic = Transport(client: .own, trust: .system)

    /// Every request through URLSession, `http:` too. On Linux it cannot pause a download, so
    /// the HTTP source asks for bounded ranges no larger than its free buffer; and a
    /// synchronous read must not wait on URLSession's own queue (see
    /// ``HTTPDataSource/reasonWaitingWouldDeadlock()``).
    public static let urlSession = Transport(client: .urlSession, trust: .system)

    /// This transport, its own client trusting `trust` for `https:` (curl's `--cacert`).
    public func trusting(_ trust: TLSTrust) -> Transport {
        Transport(client: client, trust: trust)
    }

    /// Whether a request to `url` goes over the package's own HTTP/1.1 client: `http:`, and
    /// `https:` where ``TLSTrust/isAvailable``, with ``automatic``; everything else goes
    /// through URLSession. The one rule every client of the package applies.
    package func usesOwnClient(for url: URL) -> Bool {
        guard client == .own else { return false }
        switch url.scheme?.lowercased() {
        case "http": return true
        case "https": return TLSTrust.isAvailable
        default: return false
        }
    }
}
