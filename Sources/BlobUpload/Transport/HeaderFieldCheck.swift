import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
internal import HTTP1

/// Caller-supplied header fields, checked by the package's one field check
/// (``HTTPFieldCheck``) before any transport sees them. The socket transport writes names and
/// values verbatim; FoundationNetworking's `URLRequest.setValue` silently drops a value with a
/// line break instead, which would lose, say, an `Authorization` field without a word: fields
/// are checked before either.
enum HeaderFieldCheck {
    /// The first unusable field of `fields`, as the error to throw, or `nil` when all are usable.
    static func problem(in fields: [String: String]) -> BlobUploadError? {
        HTTPFieldCheck.firstProblem(in: fields).map { error(name: $0.name, problem: $0.problem) }
    }

    /// The error for the field `name` with `problem`.
    static func error(name: String, problem: HTTPFieldCheck.Problem) -> BlobUploadError {
        switch problem {
        case .name: .invalidHeader(name: name, reason: "the name is not an HTTP token (no ':', spaces or control characters)")
        case .value: .invalidHeader(name: name, reason: "the value contains a line break or NUL")
        }
    }

    /// Sets `fields` on `request`, after checking them all.
    /// - Throws: ``BlobUploadError/invalidHeader(name:reason:)`` for the first unusable field;
    ///   `request` is then unchanged.
    static func apply(_ fields: [String: String], to request: inout URLRequest) throws(BlobUploadError) {
        if let problem = problem(in: fields) {
            throw problem
        }
        for (name, value) in fields {
            request.setValue(value, forHTTPHeaderField: name)
        }
    }

    /// The socket transport's head for `request`, a `URLRequest` whose fields were checked with
    /// ``apply(_:to:)`` (one case-insensitive set of fields, as URLSession would send them).
    static func requestHead(of request: URLRequest) -> HTTPRequestHead {
        HTTPRequestHead(
            method: request.httpMethod ?? "GET", url: request.url ?? URL(fileURLWithPath: "/"),
            fields: (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}
