internal import HTTP1

/// What a response head means for a reader that asked for a range of a pinned version: which
/// blob bytes its body carries, or why it cannot be used.
struct HTTPRangeResponse: Equatable {
    /// The blob's total length, when the response says.
    var length: Int64?
    /// The version the response names.
    var version: HTTPBlobVersion
    /// Leading body bytes to drop: a server that ignores `Range` sends the blob from byte 0.
    var skip: Int64
    /// One past the blob offset of the body's last byte, when known.
    var bodyEnd: Int64?
    /// Whether the head itself declares ``bodyEnd`` (a `Content-Range`, a `200`'s
    /// `Content-Length`), rather than the length an earlier answer told: a body that goes on
    /// past it breaks the protocol, where one past a length told earlier is another version.
    var declaresBodyEnd = true
    /// Whether the server ignored the range (a `200` answer), sending the whole blob.
    var ignoresRange: Bool
    /// Whether the request began exactly at the end of the blob (a `416` naming that length):
    /// there is no body and nothing more to read.
    var isEndOfBlob: Bool

    /// Interprets `head`, the answer to `request`. What is checked, and when:
    /// - every head first passes ``HTTPResponseHead/framingViolation`` (codings, lengths, size)
    ///   and ``HTTPResponseHead/contentCodingViolation``, else
    ///   ``BlobStreamError/protocolViolation(url:reason:)``;
    /// - a `206` must carry a valid `Content-Range` that starts at the offset asked for, whose
    ///   `Content-Length` (if any) is the range's size, else `protocolViolation`;
    /// - once a version is pinned, a `200` or `206` must name it (``HTTPBlobVersion`` says how),
    ///   a length it names (`Content-Range` total, a `200`'s `Content-Length`) must equal the
    ///   known one, and a `206`'s last byte must lie within it, else
    ///   ``BlobStreamError/sourceChanged(resource:offset:reason:)`` at the offset asked for;
    /// - a `416` ends the blob only if its `bytes */total` is exactly the offset asked for, the
    ///   known length if any, and the validators it names (it may name none) are the pinned ones;
    ///   one to a range from byte 0 that names no length is an empty blob, under the same rules;
    ///   the source's first answer (nothing pinned yet) with a total before the offset asked
    ///   for is ``BlobStreamError/invalidOffset(resource:offset:length:)``; any other `416`
    ///   that names another total or other validators than the pinned ones is
    ///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``.
    /// - Parameters:
    ///   - pinned: The version the reader pinned, or `nil` before the first response.
    ///   - knownLength: The length any earlier response told, or `nil` while unknown.
    ///   - resource: The URL, for errors.
    static func interpret(
        _ head: HTTPResponseHead,
        for request: HTTPRangeRequest,
        pinned: HTTPBlobVersion?,
        knownLength: Int64?,
        resource: String
    ) -> Result<HTTPRangeResponse, BlobStreamError> {
        func violation(_ reason: String) -> Result<HTTPRangeResponse, BlobStreamError> {
            .failure(.protocolViolation(url: resource, reason: "\(reason) (HTTP \(head.statusCode), at offset \(request.first))"))
        }
        func changed(_ reason: String) -> Result<HTTPRangeResponse, BlobStreamError> {
            .failure(.sourceChanged(resource: resource, offset: request.first, reason: reason))
        }
        func lengthChange(to length: Int64?) -> String? {
            guard let knownLength, let length, knownLength != length else { return nil }
            return "another version: the length was \(knownLength) bytes and is now \(length)"
        }
        // Only the blob's bytes must come as they are; an error's body is read for its message only.
        let carriesBlob = head.statusCode == 200 || head.statusCode == 206
        if let reason = head.framingViolation ?? (carriesBlob ? head.contentCodingViolation : nil) { return violation(reason) }
        let version = HTTPBlobVersion(head)
        switch head.statusCode {
        case 206:
            guard let range = head.contentRange else {
                return violation("a 206 answer without a valid single Content-Range (\(head["content-range"] ?? "none"))")
            }
            guard range.first == request.first else {
                return violation("asked for bytes from \(request.first), the server sent bytes from \(range.first)")
            }
            if let length = head.contentLength, length != range.last - range.first + 1 {
                return violation("Content-Length \(length) is not the size of Content-Range \(range.first)-\(range.last)")
            }
            if let reason = pinned?.mismatch(with: version) ?? lengthChange(to: range.total) { return changed(reason) }
            if let knownLength, range.last >= knownLength {
                return changed("another version: the length was \(knownLength) bytes and now there is a byte at \(range.last)")
            }
            // All that was asked, to its end or the blob's: a server that sends less serves
            // no range as asked (and a shorter 206 again to the next request).
            if let total = range.total, case let wantedLast = min(request.end ?? total, total) - 1, range.last < wantedLast {
                return violation("asked for bytes \(request.first)-\(wantedLast), the server sent bytes \(range.first)-\(range.last) only")
            }
            return .success(HTTPRangeResponse(
                length: range.total, version: version, skip: 0,
                bodyEnd: range.last + 1, ignoresRange: false, isEndOfBlob: false))
        case 200:
            // With If-Range, a 200 means the pinned version is gone, unless the server ignores
            // ranges altogether and still names the same version: then it is the same bytes from
            // 0, skipped to the offset. Of unknown length, it must still reach the known one.
            let length = head.contentLength
            if let reason = pinned?.mismatch(with: version) ?? lengthChange(to: length) { return changed(reason) }
            if let length, request.first > length {
                return .failure(.invalidOffset(resource: resource, offset: request.first, length: length))
            }
            return .success(HTTPRangeResponse(
                length: length, version: version, skip: request.first,
                bodyEnd: length ?? knownLength, declaresBodyEnd: length != nil, ignoresRange: true, isEndOfBlob: false))
        case 416:
            if let total = head.unsatisfiedRangeTotal, total == request.first, lengthChange(to: total) == nil {
                if let reason = pinned?.mismatch(withEndOf: version) { return changed(reason) }
                return .success(HTTPRangeResponse(
                    length: total, version: pinned ?? version, skip: 0,
                    bodyEnd: total, ignoresRange: false, isEndOfBlob: true))
            }
            if request.first == 0, head.unsatisfiedRangeTotal == nil {
                // A range from byte 0 is unsatisfiable only for an empty representation (RFC
                // 9110 §14.1.1), which S3 answers so without naming the length.
                if let reason = lengthChange(to: 0) ?? pinned?.mismatch(withEndOf: version) { return changed(reason) }
                return .success(HTTPRangeResponse(
                    length: 0, version: pinned ?? version, skip: 0, bodyEnd: 0, ignoresRange: false, isEndOfBlob: true))
            }
            if pinned == nil, let total = head.unsatisfiedRangeTotal, total < request.first {
                // The source's first answer: a reader that starts past the end (a stream
                // positioned there before its open). The length is all there is to know.
                return .failure(.invalidOffset(resource: resource, offset: request.first, length: total))
            }
            // A total other than the known length, or other validators than the pinned ones, is
            // another version of the blob (it shrank between two requests), not a failed request.
            if let reason = lengthChange(to: head.unsatisfiedRangeTotal) ?? pinned?.mismatch(withEndOf: version) {
                return changed(reason)
            }
            return .failure(.httpStatus(url: resource, statusCode: 416))
        default:
            return .failure(.httpStatus(url: resource, statusCode: head.statusCode))
        }
    }
}

extension HTTPResponseHead {
    /// Why the body is not the blob's bytes because of a content coding, or `nil`: a range of
    /// an encoded representation is not a range of the blob (the request says
    /// `Accept-Encoding: identity`, and only `identity` is accepted).
    var contentCodingViolation: String? {
        contentCodings.first.map {
            "the server applied the content coding \"\($0)\" despite Accept-Encoding: identity, so its bytes are not the blob's"
        }
    }
}
