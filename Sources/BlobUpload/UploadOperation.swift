/// The protocol and operation a request belongs to. Errors that every upload protocol can
/// meet (``BlobUploadError/protocolViolation(operation:url:reason:)``) carry one, so their
/// message names the protocol that was broken — tus, S3 or a plain HTTP request such as the
/// streamed PUT — by construction, whichever code path threw them.
public enum UploadOperation: Sendable, Hashable, CustomStringConvertible {
    /// A tus request: `method` is `POST` (creation), `HEAD`, `PATCH`, `OPTIONS` or `DELETE`.
    case tus(method: String)
    /// A plain HTTP request that is no part of tus or S3: the streamed upload's `PUT` (or
    /// whatever `method` its caller chose).
    case http(method: String)
    /// An S3 request: `operation` is S3's name for it (`UploadPart`,
    /// `CompleteMultipartUpload`, …), as ``S3ServiceError/operation`` names it.
    case s3(operation: String)

    /// The protocol's name as a message says it: `tus`, `HTTP`, `S3`.
    public var protocolName: String {
        switch self {
        case .tus: "tus"
        case .http: "HTTP"
        case .s3: "S3"
        }
    }

    /// `tus PATCH`, `HTTP PUT`, `S3 UploadPart`.
    public var description: String {
        switch self {
        case .tus(let method): "tus \(method)"
        case .http(let method): "HTTP \(method)"
        case .s3(let operation): "S3 \(operation)"
        }
    }
}
