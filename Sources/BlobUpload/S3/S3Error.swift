import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why an S3 request or upload failed. Every case names what it concerns — the bucket, key,
/// upload id and part number where they exist — so the message alone says what to look at,
/// and none ever contains the secret access key or the session token.
public enum S3Error: Error, Sendable, Hashable {
    /// No credentials: neither passed in nor in the environment.
    case missingCredentials(reason: String)
    /// A setting cannot be used (a part size S3 refuses, a bucket name, parallelism below 1);
    /// nothing was sent.
    case invalidConfiguration(name: String, reason: String)
    /// The endpoint's scheme is not served by this client: it speaks plain `http:` over the
    /// package's own HTTP/1.1 client only (see the README's S3 section).
    case unsupportedEndpoint(endpoint: String, reason: String)
    /// S3 answered with an error status; its XML error body is parsed into ``S3ServiceError``.
    case service(S3ServiceError)
    /// The multipart upload `uploadID` of `bucket`/`key` no longer exists (`NoSuchUpload`): it
    /// was completed or aborted, or a lifecycle rule removed it. Start a new upload.
    case uploadGone(bucket: String, key: String, uploadID: String)
    /// The source could not be read, or a request could not be sent or answered (connection
    /// refused or dropped, timeout, a redirect refused because it would carry the
    /// `Authorization` field to another host or lead to another object, an answer body past
    /// the bound no S3 answer reaches).
    case transfer(BlobUploadError)
    /// Part `partNumber` of upload `uploadID` failed `attempts` times in a row, with transient
    /// failures (`SlowDown`, 5xx, dropped connections); the upload can be resumed.
    indirect case retriesExhausted(bucket: String, key: String, uploadID: String?, partNumber: Int?, attempts: Int, lastError: S3Error)
    /// S3's answer to `operation` on `bucket`/`key` cannot be used (no `ETag`, no `UploadId`,
    /// unparsable XML, a part list that contradicts itself).
    case protocolViolation(bucket: String, key: String, operation: String, reason: String)
    /// The source has `length` bytes: more than 10,000 parts of at most 5 GiB can hold.
    case sourceTooLarge(source: String, length: Int64)
    /// The upload was cancelled by its caller; `uploadID`, when one was created, can be resumed
    /// (or aborted).
    case cancelled(uploadID: String?)
}

/// One error answer of S3: status, `Code`, `Message` and `RequestId` from its XML body, and
/// the request it answered.
public struct S3ServiceError: Sendable, Hashable {
    /// The S3 operation: `PutObject`, `CreateMultipartUpload`, `UploadPart`, `ListParts`,
    /// `CompleteMultipartUpload`, `AbortMultipartUpload`.
    public var operation: String
    /// The HTTP status.
    public var statusCode: Int
    /// S3's error code (`SignatureDoesNotMatch`, `SlowDown`, …), or `nil` without an XML body.
    public var code: String?
    /// S3's message, one line.
    public var message: String?
    /// S3's request id, for support.
    public var requestID: String?
    /// The bucket.
    public var bucket: String
    /// The object key.
    public var key: String
    /// The multipart upload, when the request was part of one.
    public var uploadID: String?
    /// The part, for `UploadPart`.
    public var partNumber: Int?

    /// Whether asking again may succeed: throttling (`SlowDown`, 503, 429), S3's own failures
    /// (5xx, `InternalError`) and a request S3 timed out reading (`RequestTimeout`).
    public var isTransient: Bool {
        if [429, 500, 502, 503, 504].contains(statusCode) { return true }
        return ["SlowDown", "InternalError", "RequestTimeout", "ServiceUnavailable", "Throttling"].contains(code ?? "")
    }

    /// What to check, for the errors whose cause lies on this side.
    public var hint: String? {
        switch code {
        case "SignatureDoesNotMatch":
            "check the secret access key (AWS_SECRET_ACCESS_KEY), the region (AWS_REGION) the bucket is in, "
                + "and that nothing between here and the endpoint rewrites the request"
        case "RequestTimeTooSkewed":
            "this machine's clock differs from the server's by more than 15 minutes; check its time and time zone (NTP)"
        case "InvalidAccessKeyId":
            "check the access key id (AWS_ACCESS_KEY_ID) and that it belongs to this endpoint"
        case "ExpiredToken", "InvalidToken":
            "the session token (AWS_SESSION_TOKEN) expired or is not valid; get new temporary credentials"
        case "AuthorizationHeaderMalformed":
            "check the region (AWS_REGION): the bucket lives in another one"
        case "NoSuchBucket":
            "the bucket does not exist at this endpoint"
        default:
            nil
        }
    }
}

extension S3ServiceError: CustomStringConvertible {
    /// `operation bucket/key (upload …, part …): HTTP status code: message (request id …); hint`.
    public var description: String {
        var text = "\(operation) \(bucket)/\(key)"
        var context: [String] = []
        if let uploadID { context.append("upload \(uploadID)") }
        if let partNumber { context.append("part \(partNumber)") }
        if !context.isEmpty { text += " (\(context.joined(separator: ", ")))" }
        text += ": HTTP \(statusCode) \(HTTPURLResponse.localizedString(forStatusCode: statusCode))"
        if let code { text += ": \(code)" }
        if let message, !message.isEmpty { text += ": \(message)" }
        if let requestID { text += " (request id \(requestID))" }
        if let hint { text += "; \(hint)" }
        return text
    }
}

extension S3Error: CustomStringConvertible {
    /// A sentence that says what failed, where, and, where it helps, what to do.
    public var description: String {
        switch self {
        case .missingCredentials(let reason):
            return "no S3 credentials: \(reason); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN "
                + "for temporary credentials), or pass S3Credentials"
        case .invalidConfiguration(let name, let reason):
            return "S3 setting \(name): \(reason)"
        case .unsupportedEndpoint(let endpoint, let reason):
            return "S3 endpoint \(endpoint): \(reason)"
        case .service(let error):
            return error.description
        case .uploadGone(let bucket, let key, let uploadID):
            return "\(bucket)/\(key): the multipart upload \(uploadID) is gone (NoSuchUpload): it was completed or "
                + "aborted, or expired; start a new upload"
        case .transfer(let error):
            return Self.isRequestFailure(error) ? "S3 \(error)" : error.description
        case .retriesExhausted(let bucket, let key, let uploadID, let part, let attempts, let last):
            let partText = part.map { " part \($0)" } ?? ""
            let resume = uploadID.map { " (upload \($0) can be resumed)" } ?? ""
            return "\(bucket)/\(key)\(partText): gave up after \(attempts) failed attempts\(resume); last error: \(last)"
        case .protocolViolation(let bucket, let key, let operation, let reason):
            return "\(operation) \(bucket)/\(key): unusable answer: \(reason)"
        case .sourceTooLarge(let source, let length):
            return "\(source): \(length) bytes do not fit in 10,000 parts of at most 5 GiB"
        case .cancelled(let uploadID):
            return "the S3 upload was cancelled" + (uploadID.map { "; resume it with upload id \($0)" } ?? "")
        }
    }
}

extension S3Error {
    /// Whether `failure`, carried by ``transfer(_:)``, is an S3 request's own failure (no
    /// answer, a refused redirect, a header that cannot be sent), whose message ("PUT <url>: …",
    /// the URL naming part and upload) is then said to be S3's. The source's failures name the
    /// source, and S3's broken answers (``BlobUploadError/protocolViolation(operation:url:reason:)``)
    /// their operation, themselves.
    package static func isRequestFailure(_ failure: BlobUploadError) -> Bool {
        switch failure {
        case .network, .crossOriginRefused, .redirectRefused, .httpStatus, .bodyIncomplete, .invalidHeader: true
        default: false
        }
    }
}

extension S3Error: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
