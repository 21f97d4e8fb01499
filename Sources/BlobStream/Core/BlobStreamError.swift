import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a blob could not be streamed. Every case names the resource (a path, a URL, an asset
/// identifier) and, where it matters, the byte offset, so a message alone says what to fix.
///
/// ``BlobInputStream/streamError`` returns one of these; data sources, checksum calculators and
/// upload clients throw them.
public enum BlobStreamError: Error, Sendable, Hashable {
    /// Nothing exists at `resource` (no such file, asset or URL path).
    case notFound(resource: String)
    /// `path` is a directory; only regular files can be streamed.
    case isDirectory(path: String)
    /// The process may not read `resource`.
    case permissionDenied(resource: String)
    /// A system call failed with `errno` while performing `operation` on `resource`
    /// (at `offset`, when the failure concerns a particular byte).
    case system(resource: String, operation: String, offset: Int64?, errno: Int32)
    /// The data ended at `offset`, before the length the source announced when it opened.
    /// The blob shrank or the transfer broke; the bytes read so far are not the whole blob.
    case unexpectedEnd(resource: String, offset: Int64, expectedLength: Int64)
    /// After a reopen the source describes a different blob (length or version changed), so
    /// continuing at `offset` would mix two versions.
    case sourceChanged(resource: String, offset: Int64, reason: String)
    /// The source went stale `attempts` times in a row at `offset` without making progress.
    case invalidatedTooOften(resource: String, offset: Int64, attempts: Int)
    /// `offset` is negative or beyond the `length` of the blob at `resource`.
    case invalidOffset(resource: String, offset: Int64, length: Int64?)
    /// The stream was used before `open()` (or before an asynchronous open completed).
    case notOpen
    /// The stream was closed, possibly by another thread while a read was waiting.
    case closed
    /// `operation` on `resource` did not finish within `seconds`.
    case timedOut(resource: String, operation: String, seconds: Double)
    /// Waiting here would block the very thread or queue that must run for the wait to end
    /// (a synchronous open on the main thread of an asset store that answers on the main
    /// queue; a synchronous read of an HTTP source from URLSession's own queue).
    case wouldDeadlock(resource: String, reason: String)
    /// An asynchronous stream was read while it had no bytes available at `offset`. Not fatal:
    /// wait for the next `hasBytesAvailable` event.
    case wouldBlock(offset: Int64)
    /// The server answered `statusCode` to the HTTP source's `GET` of `url`. `message` is
    /// what the answer's body says, in one short line (an S3 error's `Code: Message`, a text
    /// body's first line, an HTML page's title unless it repeats the status), if anything.
    case httpStatus(url: String, statusCode: Int, message: String? = nil)
    /// The connection to `url` failed and could not be re-established.
    case network(url: String, reason: String)
    /// The URL cannot be streamed: unknown scheme, missing parts, or a store not registered.
    case unsupportedURL(url: String, reason: String)
    /// The operation was cancelled by its caller.
    case cancelled
    /// Any other failure of a custom data source, described in its own words.
    case sourceFailed(resource: String, reason: String)
    /// The server at `url` answered in a way HTTP forbids or that cannot carry the blob's own
    /// bytes (an unknown transfer coding, a content-encoded range, a malformed head).
    case protocolViolation(url: String, reason: String)
    /// `path` names something that is not a regular file (a FIFO, a socket, a device), which
    /// cannot be read at any offset; `kind` says what it is.
    case notRegularFile(path: String, kind: String)
    /// `resource` holds bytes past the `length` it announced when it opened: a size that lags
    /// the content (a pseudo, network or FUSE filesystem, a writer still appending). Delivering
    /// the announced length would be a silently short blob.
    case lengthExceeded(resource: String, length: Int64)
}

extension BlobStreamError: CustomStringConvertible {
    /// A sentence that says what failed, where, and, where it helps, what to do; the
    /// password of a URL in it is hidden (``PasswordRedaction``).
    public var description: String { PasswordRedaction.hidingPasswords(in: sentence) }

    private var sentence: String {
        switch self {
        case .notFound(let resource):
            return "\(resource): not found"
        case .isDirectory(let path):
            return "\(path): is a directory, not a file"
        case .permissionDenied(let resource):
            return "\(resource): permission denied"
        case .system(let resource, let operation, let offset, let code):
            let at = offset.map { " at offset \($0)" } ?? ""
            return "\(resource): \(operation) failed\(at): \(String(cString: strerror(code))) (errno \(code))"
        case .unexpectedEnd(let resource, let offset, let expected):
            return "\(resource): data ended at offset \(offset), before the announced length of \(expected) bytes"
        case .sourceChanged(let resource, let offset, let reason):
            return "\(resource): changed while being read (at offset \(offset)): \(reason); start again to read the new version"
        case .invalidatedTooOften(let resource, let offset, let attempts):
            return "\(resource): went stale \(attempts) times in a row at offset \(offset); giving up"
        case .invalidOffset(let resource, let offset, let length):
            let bound = length.map { " (length is \($0))" } ?? ""
            return "\(resource): invalid offset \(offset)\(bound): it must be between 0 and the length"
        case .notOpen:
            return "the stream is not open; call open() and wait for it to complete"
        case .closed:
            return "the stream was closed"
        case .timedOut(let resource, let operation, let seconds):
            return "\(resource): \(operation) timed out after \(seconds) s"
        case .wouldDeadlock(let resource, let reason):
            return "\(resource): would deadlock: \(reason)"
        case .wouldBlock(let offset):
            return "no bytes available yet at offset \(offset); wait for the next hasBytesAvailable event"
        case .httpStatus(let url, let statusCode, let message):
            let reason = HTTPURLResponse.localizedString(forStatusCode: statusCode)
            return "HTTP source GET \(url): HTTP \(statusCode) \(reason)" + (message.map { ": \($0)" } ?? "")
        case .network(let url, let reason):
            return "\(url): network error: \(reason)"
        case .unsupportedURL(let url, let reason):
            return "\(url): cannot stream this URL: \(reason)"
        case .cancelled:
            return "cancelled"
        case .sourceFailed(let resource, let reason):
            return "\(resource): \(reason)"
        case .protocolViolation(let url, let reason):
            return "HTTP source GET \(url): the server broke the HTTP protocol: \(reason)"
        case .notRegularFile(let path, let kind):
            return "\(path): is a \(kind), not a regular file; only regular files can be read at any offset"
        case .lengthExceeded(let resource, let length):
            return "\(resource): holds more bytes than the \(length) its size announced (the data goes on at offset \(length)); "
                + "its size cannot be trusted (a pseudo, network or FUSE filesystem, or a writer still appending): "
                + "read it as a stream of unknown length, through a pipe, or once the writer is done"
        }
    }
}

extension BlobStreamError: LocalizedError {
    /// The same text as ``description``, so `localizedDescription` is useful too.
    public var errorDescription: String? { description }
}

extension BlobStreamError: CustomNSError {
    /// `"BlobStreamError"`: the domain of the `NSError` this error bridges to.
    public static var errorDomain: String { "BlobStreamError" }

    /// A stable code for each case, for code that only sees the bridged `NSError`.
    public var errorCode: Int {
        switch self {
        case .notFound: return 1
        case .isDirectory: return 2
        case .permissionDenied: return 3
        case .system: return 4
        case .unexpectedEnd: return 5
        case .sourceChanged: return 6
        case .invalidatedTooOften: return 7
        case .invalidOffset: return 8
        case .notOpen: return 9
        case .closed: return 10
        case .timedOut: return 11
        case .wouldDeadlock: return 12
        case .wouldBlock: return 13
        case .httpStatus: return 14
        case .network: return 15
        case .unsupportedURL: return 16
        case .cancelled: return 17
        case .sourceFailed: return 18
        case .protocolViolation: return 19
        case .notRegularFile: return 20
        case .lengthExceeded: return 21
        }
    }

    /// Carries the description under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}
