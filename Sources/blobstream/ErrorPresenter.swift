import BlobStream
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the command line turns library errors into the sentence a user reads, so
/// every command says the same thing the same way:
///
/// - an HTTP error shows its status, its reason and at most one line of a plain-text body
///   (an HTML error page says nothing the status does not);
/// - a server that refuses connections is "cannot connect to HOST:PORT: connection refused",
///   whichever transport found out and however it phrased it;
/// - the input the command works on is named once, at the start.
enum ErrorPresenter {
    /// The message for an upload error, prefixed with `subject` (the source's name) unless the
    /// message names it already.
    static func message(_ error: BlobUploadError, subject: String) -> String {
        prefixed(sentence(error), subject: subject)
    }

    /// The message for an upload error of the protocol `protocolName` (`S3`), which the
    /// sentence names first, prefixed with `subject` as above.
    static func message(_ error: BlobUploadError, subject: String, of protocolName: String?) -> String {
        prefixed(sentence(error, of: protocolName), subject: subject)
    }

    /// The sentence for `error` of the protocol `protocolName`, which it names first ("S3 PUT
    /// <url>: …"); a refused connection is about the host, whatever the protocol.
    static func sentence(_ error: BlobUploadError, of protocolName: String?) -> String {
        guard let protocolName, !isConnectionRefused(error) else { return sentence(error) }
        return "\(protocolName) \(sentence(error))"
    }

    /// The message for a stream error, prefixed with `subject` unless the message names it.
    static func message(_ error: BlobStreamError, subject: String) -> String {
        prefixed(sentence(error), subject: subject)
    }

    /// Whether `error` says that nothing listens where it connected.
    static func isConnectionRefused(_ error: BlobUploadError) -> Bool {
        switch error {
        case .network(_, _, let reason, let code):
            return code == URLError.Code.cannotConnectToHost.rawValue || saysRefused(reason)
        case .retriesExhausted(_, _, _, let last):
            return isConnectionRefused(last)
        default:
            return false
        }
    }

    /// `cannot connect to 127.0.0.1:18090 (http://…): connection refused; is the server running?`
    static func connectionRefused(url: String) -> String {
        let parsed = URL(string: url)
        // An IPv6 address in brackets, as in a URL: [::1]:443.
        let place = parsed.flatMap { url in
            url.host.map { host in
                "\(host.contains(":") ? "[\(host)]" : host):\(url.port ?? (url.scheme == "https" ? 443 : 80))"
            }
        } ?? url
        return "cannot connect to \(place) (\(url)): connection refused; is the server running?"
    }

    /// The sentence for `error`, naming no subject of its own.
    static func sentence(_ error: BlobUploadError) -> String {
        switch error {
        case .network(_, let url, _, _) where isConnectionRefused(error):
            return connectionRefused(url: url)
        case .retriesExhausted(let url, let offset, let attempts, let last):
            let failure = sentence(last)
            return isConnectionRefused(last)
                ? "\(failure) (gave up after \(attempts) attempts)"
                : "\(url): gave up at offset \(offset) after \(attempts) failed attempts in a row; last error: \(failure)"
        case .source(let error):
            return sentence(error)
        default:
            return error.description
        }
    }

    /// The sentence for `error`, naming no subject of its own.
    static func sentence(_ error: BlobStreamError) -> String {
        switch error {
        case .network(let url, let reason) where saysRefused(reason):
            return connectionRefused(url: url)
        default:
            return error.description
        }
    }

    /// Prints each reconnect of an HTTP source on `console` (`retry 1 of 5 in 0.1 s after: …`),
    /// so a source that stalls is not minutes of silence.
    static func retryPrinter(_ console: Console) -> @Sendable (HTTPDataSource.Retry) -> Void {
        { retry in
            console.error(String(format: "retry %d of %d in %.1f s after: %@",
                                 retry.attempt - 1, retry.attempts - 1, retry.delay, sentence(retry.error)))
        }
    }

    /// `HTTP 405 Method Not Allowed`.
    static func statusLine(_ status: Int) -> String {
        "HTTP \(status) \(HTTPURLResponse.localizedString(forStatusCode: status))"
    }

    /// Whether a transport's reason says the connection was refused: the socket transports
    /// say `Connection refused (errno 111)`, libcurl `Couldn't connect to server`.
    private static func saysRefused(_ reason: String) -> Bool {
        reason.contains("Connection refused") || reason.contains("Couldn't connect to server")
    }

    /// `text`, prefixed with `subject` unless it names it already; compared with passwords
    /// hidden on both sides, since the library's messages hide them.
    private static func prefixed(_ text: String, subject: String) -> String {
        let (text, subject) = (PasswordRedaction.hidingPasswords(in: text), PasswordRedaction.hidingPasswords(in: subject))
        return text.contains(subject) ? text : "\(subject): \(text)"
    }
}
