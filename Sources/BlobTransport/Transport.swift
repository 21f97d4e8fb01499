import Foundation
package import HTTP1

/// How the package's HTTP clients (the HTTP source of BlobStream, and tus, the streamed PUT and
/// S3 of BlobUpload) talk to a server: one choice for all of them, made by one rule
/// (``route(for:)``). See the README's "Transports" section.
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
    /// `HTTPDataSource.reasonWaitingWouldDeadlock()`).
    public static let urlSession = Transport(client: .urlSession, trust: .system)

    /// This transport, its own client trusting `trust` for `https:` (curl's `--cacert`).
    public func trusting(_ trust: TLSTrust) -> Transport {
        Transport(client: client, trust: trust)
    }

    /// Which client carries a request.
    package enum Route: Sendable, Equatable {
        /// The package's own HTTP/1.1 client (``HTTP1Connection``), trusting this for `https:`.
        case own(TLSConfiguration)
        /// URLSession (FoundationNetworking on Linux).
        case urlSession

        /// Whether a download over this client can pause (its reader behind, TCP flow control
        /// holds the server), so one request may ask for the whole rest of a blob. URLSession
        /// on Linux cannot: it queues every body chunk without bound.
        package var pausesDownloads: Bool {
            if case .own = self { return true }
            return false
        }
    }

    /// The client for a request to `url`: the package's own for `http:`, and for `https:` where
    /// ``TLSTrust/isAvailable``, with ``automatic``; URLSession for everything else. Every client of
    /// the package asks it.
    package func route(for url: URL) -> Route {
        guard client == .own else { return .urlSession }
        switch url.scheme?.lowercased() {
        case "http": return .own(trust.configuration)
        case "https": return TLSTrust.isAvailable ? .own(trust.configuration) : .urlSession
        default: return .urlSession
        }
    }
}
