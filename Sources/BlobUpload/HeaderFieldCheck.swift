import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Refuses caller-supplied header fields that could not be sent as they are. The socket
/// transport writes names and values verbatim, so a CR or LF would end the field and let the
/// rest of it inject fields — or a whole second request — and a NUL would cut it short; a
/// name must be an HTTP token (no ':', no spaces), or the field would parse as another one.
/// FoundationNetworking's `URLRequest.setValue` silently drops such a value instead, which
/// would lose, say, an `Authorization` field without a word: fields are checked before that.
enum HeaderFieldCheck {
    private static let token = CharacterSet(
        charactersIn: "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    /// The first unusable field of `fields`, as the error to throw, or `nil` when all are usable.
    static func problem(in fields: [String: String]) -> BlobUploadError? {
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            if name.isEmpty || name.unicodeScalars.contains(where: { !token.contains($0) }) {
                return .invalidHeader(name: name, reason: "the name is not an HTTP token (no ':', spaces or control characters)")
            }
            if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                return .invalidHeader(name: name, reason: "the value contains a line break or NUL")
            }
        }
        return nil
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
}
