/// What a response head means for a reader that asked for a range of a pinned version: which
/// blob bytes its body carries, or why it cannot be used.
struct HTTPRangeResponse: Equatable {
    /// The blob's total length, when the response says.
    var length: Int64?
    /// The response's version validator (the pinned one when the response names none).
    var validator: String?
    /// Leading body bytes to drop: a server that ignores `Range` sends the blob from byte 0.
    var skip: Int64
    /// One past the blob offset of the body's last byte, when known.
    var bodyEnd: Int64?
    /// Whether the server ignored the range (a `200` answer), sending the whole blob.
    var ignoresRange: Bool
    /// Whether the request began exactly at the end of the blob (a `416` naming that length):
    /// there is no body and nothing more to read.
    var isEndOfBlob: Bool

    /// Interprets `head`, the answer to `request`.
    /// - Parameters:
    ///   - pinnedValidator: The version the reader pinned, or `nil` before the first response or
    ///     when the server names none.
    ///   - pinnedLength: The length the reader pinned, or `nil` when unknown.
    ///   - resource: The URL, for errors.
    static func interpret(
        _ head: HTTPResponseHead,
        for request: HTTPRangeRequest,
        pinnedValidator: String?,
        pinnedLength: Int64?,
        resource: String
    ) -> Result<HTTPRangeResponse, BlobStreamError> {
        if let coding = head.contentCoding {
            return .failure(.sourceFailed(
                resource: resource,
                reason: "the server applied content coding \"\(coding)\" despite Accept-Encoding: identity, so its bytes are not the blob's"))
        }
        func changed(_ reason: String) -> Result<HTTPRangeResponse, BlobStreamError> {
            .failure(.sourceChanged(resource: resource, offset: request.first, reason: reason))
        }
        func lengthChanged(to length: Int64?) -> Bool {
            if let pinnedLength, let length { return pinnedLength != length }
            return false
        }
        if head.hasMalformedContentLength {
            return .failure(.sourceFailed(
                resource: resource,
                reason: "the server sent an invalid or conflicting Content-Length (\(head["content-length"] ?? ""))"))
        }
        switch head.statusCode {
        case 206:
            guard let range = head.contentRange else {
                return .failure(.sourceFailed(resource: resource, reason: "a 206 answer without a valid Content-Range"))
            }
            guard range.first == request.first else {
                return .failure(.sourceFailed(
                    resource: resource,
                    reason: "asked for bytes from \(request.first), the server sent bytes from \(range.first)"))
            }
            if let pinnedValidator, let validator = head.validator, validator != pinnedValidator {
                return changed("the version was \(pinnedValidator) and is now \(validator)")
            }
            if lengthChanged(to: range.total) {
                return changed("the length was \(pinnedLength ?? 0) bytes and is now \(range.total ?? 0)")
            }
            return .success(HTTPRangeResponse(
                length: range.total, validator: head.validator ?? pinnedValidator, skip: 0,
                bodyEnd: range.last + 1, ignoresRange: false, isEndOfBlob: false))
        case 200:
            // With If-Range, a 200 means the pinned version is gone, unless the server ignores
            // ranges altogether and still names the same version.
            if let pinnedValidator, head.validator != pinnedValidator {
                let now = head.validator.map { "is now \($0)" } ?? "is no longer named by the server"
                return changed("the version was \(pinnedValidator) and \(now)")
            }
            let length = head.isChunked ? nil : head.contentLength
            if lengthChanged(to: length) {
                return changed("the length was \(pinnedLength ?? 0) bytes and is now \(length ?? 0)")
            }
            if let length, request.first > length {
                return .failure(.invalidOffset(resource: resource, offset: request.first, length: length))
            }
            return .success(HTTPRangeResponse(
                length: length, validator: head.validator, skip: request.first,
                bodyEnd: length, ignoresRange: true, isEndOfBlob: false))
        case 416:
            if let total = head.unsatisfiedRangeTotal, total == request.first, !lengthChanged(to: total) {
                return .success(HTTPRangeResponse(
                    length: total, validator: pinnedValidator, skip: 0,
                    bodyEnd: total, ignoresRange: false, isEndOfBlob: true))
            }
            return .failure(.httpStatus(url: resource, statusCode: 416))
        default:
            return .failure(.httpStatus(url: resource, statusCode: head.statusCode))
        }
    }
}
