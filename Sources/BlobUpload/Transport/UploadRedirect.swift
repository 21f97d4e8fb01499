import Foundation
internal import HTTP1

/// The upload clients' reading of ``HTTPRedirectPolicy/upload`` (tus and the streamed PUT, on
/// either transport): its refusals as upload errors.
extension HTTPReply {
    /// Where to send this answer's request again, `nil` when the answer is no redirect to
    /// follow (a 303 to a request with a body is the request's answer), or the refusal:
    /// ``BlobUploadError/redirectRefused(method:url:statusCode:location:)``
    /// for a request with a body (`hasBody`), ``BlobUploadError/crossOriginRefused(method:url:allowedOrigin:)``
    /// for another origin, ``BlobUploadError/network(method:url:reason:code:)`` after too many,
    /// ``BlobUploadError/malformedAnswer(operation:url:reason:)`` naming `operation` for a
    /// `Location` that is no URL.
    /// - Parameter followed: The redirects this request followed already.
    func redirect(hasBody: Bool, followed: Int, operation: UploadOperation) -> Result<HTTPRedirectPolicy.Follow, BlobUploadError>? {
        HTTPRedirectPolicy.upload
            .next(method: method, url: url, hasBody: hasBody, status: statusCode, location: header("location"), followed: followed)?
            .mapError { $0.uploadError(method: method, url: url, statusCode: statusCode, operation: operation) }
    }
}

extension HTTPRedirectPolicy.Refusal {
    /// The upload error for this refusal of a redirect (`statusCode`) of `method url`, a
    /// request of `operation`.
    func uploadError(method: String, url: URL, statusCode: Int, operation: UploadOperation) -> BlobUploadError {
        switch self {
        case .invalidLocation:
            // Whether or not the request had a body, the answer itself is broken.
            return .malformedAnswer(operation: operation, url: url.absoluteString, reason: reason)
        case .body, .otherResource:
            return .redirectRefused(method: method, url: url.absoluteString, statusCode: statusCode, location: location)
        case .otherOrigin, .notHTTP, .downgrade:
            // Each leaves the origin the request's header fields were meant for.
            return .crossOriginRefused(method: method, url: location, allowedOrigin: "\(URLOrigin(url))")
        case .tooMany:
            return .network(method: method, url: url.absoluteString, reason: reason, code: URLError.Code.httpTooManyRedirects.rawValue)
        }
    }
}
