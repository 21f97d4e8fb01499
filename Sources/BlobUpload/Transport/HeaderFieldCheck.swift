import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import HTTP1

/// A request's caller-supplied header fields, checked once, by HTTP1's one field check
/// (``HTTPRequestHead/init(method:url:checking:setting:)``), before either transport sees
/// them: the socket transport writes the checked head verbatim, and the URLSession transport
/// gets a `URLRequest` made from it (``Foundation/URLRequest/init(_:)``) — FoundationNetworking's
/// `URLRequest.setValue` would silently drop a value with a line break, losing, say, an
/// `Authorization` field without a word.
enum HeaderFieldCheck {
    /// The head of a `method` request to `url` with the caller's `fields`, and `setting`
    /// (protocol fields that replace a caller's of the same name).
    /// - Throws: ``BlobUploadError/invalidOption(name:reason:)`` for a method that is not a
    ///   token, ``BlobUploadError/invalidHeader(name:reason:)`` for the first unusable field.
    static func head(
        method: String, url: URL, fields: [String: String], setting: [(String, String)] = []
    ) throws(BlobUploadError) -> HTTPRequestHead {
        do {
            return try HTTPRequestHead(method: method, url: url, checking: fields, setting: setting)
        } catch {
            throw Self.error(error)
        }
    }

    /// The error for an unusable field.
    static func error(_ failure: HTTPFieldCheck.Failure) -> BlobUploadError {
        error(name: failure.name, problem: failure.problem)
    }

    /// The error for the field `name` with `problem` (for a head asked for its
    /// ``HTTPRequestHead/fieldProblem``).
    static func error(name: String, problem: HTTPFieldCheck.Problem) -> BlobUploadError {
        switch problem {
        case .name: .invalidHeader(name: name, reason: "the name is not an HTTP token (no ':', spaces or control characters)")
        case .value: .invalidHeader(name: name, reason: "the value contains a line break or NUL")
        case .method:
            .invalidOption(name: "method", reason: "\"\(name)\" is not an HTTP method token (letters, digits and !#$%&'*+-.^_`|~ only)")
        }
    }
}
