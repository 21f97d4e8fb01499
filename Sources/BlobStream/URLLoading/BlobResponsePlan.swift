import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one request to ``BlobURLProtocol`` is answered with, decided from the request's
/// `Range`, `If-Range` and method and the source's description, the way an HTTP server would:
/// players and resumable downloaders send the same requests to `asset:` as to `https:`.
package struct BlobResponsePlan: Equatable {
    /// 200, 206 or 416.
    var statusCode: Int
    /// The first byte of the body.
    var start: Int64
    /// How many bytes the body has; `nil` when the source does not know its length (then the
    /// body runs to the end of data).
    var count: Int64?
    /// Whether a body is sent at all (not for `HEAD`, not for 416).
    var sendsBody: Bool
    /// The response's header fields.
    var headerFields: [String: String]

    /// A byte range as a request names it.
    package enum RequestedRange: Equatable, Sendable {
        /// `bytes=a-b` (`last` inclusive) or `bytes=a-` (`last` nil).
        case from(first: Int64, last: Int64?)
        /// `bytes=-n`: the last `n` bytes.
        case suffix(Int64)
    }

    /// The single byte range of a `Range` header, or `nil` when it names none this protocol
    /// serves: no header, another unit, several ranges or a malformed one. RFC 9110 lets a
    /// server ignore such a header and answer 200 with the whole blob. Without `saturating`, a
    /// number past `Int64` makes the range malformed too (a command line refuses it).
    package static func requestedRange(_ header: String?, saturating: Bool = true) -> RequestedRange? {
        guard let header else { return nil }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash], lastText = spec[spec.index(after: dash)...]
        func number(_ text: Substring) -> Int64? {
            guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            // Digits past Int64 are a valid, huge position (RFC 9110 sets no bound): saturated,
            // a first byte is past any end (416) and a last byte is clamped to it.
            return Int64(text) ?? (saturating ? Int64.max : nil)
        }
        if firstText.isEmpty {
            return number(lastText).map(RequestedRange.suffix)
        }
        guard let first = number(firstText) else { return nil }
        if lastText.isEmpty { return .from(first: first, last: nil) }
        guard let last = number(lastText), last >= first else { return nil }
        return .from(first: first, last: last)
    }

    /// The start offset a `bytes=a-…` request may seek to before the source is open (no length
    /// is needed for it), so the stream's first block is read there and not at 0.
    /// With `If-Range` the range may be ignored after open, so the stream starts at 0.
    static func startOffsetBeforeOpen(for request: URLRequest) -> Int64 {
        guard request.value(forHTTPHeaderField: "If-Range") == nil,
            case .from(let first, _)? = requestedRange(request.value(forHTTPHeaderField: "Range")) else { return 0 }
        return first
    }

    /// Plans the answer to `request` for a blob that `description` describes.
    init(request: URLRequest, description: BlobSourceDescription) {
        let length = description.length
        let entityTag = Self.entityTag(for: description.version)
        var fields: [String: String] = ["Cache-Control": "no-store"]
        if let entityTag { fields["ETag"] = entityTag }
        if let mediaType = description.mediaType { fields["Content-Type"] = mediaType }
        let isHead = request.httpMethod?.uppercased() == "HEAD"

        var range = Self.requestedRange(request.value(forHTTPHeaderField: "Range"))
        if let condition = request.value(forHTTPHeaderField: "If-Range"), condition != entityTag {
            range = nil  // another version than the one the client has: send it whole
        }
        guard let length else {
            // Without a length no range can be resolved, nor a 206's Content-Range written.
            self.init(statusCode: 200, start: 0, count: nil, sendsBody: !isHead, headerFields: fields)
            return
        }
        fields["Accept-Ranges"] = "bytes"
        let span: (first: Int64, last: Int64)?
        switch range {
        case .none:
            fields["Content-Length"] = String(length)
            self.init(statusCode: 200, start: 0, count: length, sendsBody: !isHead, headerFields: fields)
            return
        case .some(.from(let first, let last)):
            span = first < length ? (first, min(last ?? length - 1, length - 1)) : nil
        case .some(.suffix(let suffix)):
            span = suffix > 0 && length > 0 ? (max(0, length - suffix), length - 1) : nil
        }
        guard let span else {
            fields["Content-Range"] = "bytes */\(length)"
            fields["Content-Length"] = "0"
            self.init(statusCode: 416, start: 0, count: 0, sendsBody: false, headerFields: fields)
            return
        }
        let count = span.last - span.first + 1
        fields["Content-Range"] = "bytes \(span.first)-\(span.last)/\(length)"
        fields["Content-Length"] = String(count)
        self.init(statusCode: 206, start: span.first, count: count, sendsBody: !isHead, headerFields: fields)
    }

    /// The answer to a `bytes=a-…` request whose start the source refused at open because it
    /// lies at or past the end: 416, naming the length the refusal reported. Without a length
    /// there is no `Content-Range` (`bytes */*` is not valid syntax).
    static func unsatisfiable(length: Int64?) -> BlobResponsePlan {
        var fields = ["Cache-Control": "no-store", "Content-Length": "0"]
        if let length { fields["Content-Range"] = "bytes */\(length)" }
        return BlobResponsePlan(statusCode: 416, start: 0, count: 0, sendsBody: false, headerFields: fields)
    }

    private init(statusCode: Int, start: Int64, count: Int64?, sendsBody: Bool, headerFields: [String: String]) {
        self.statusCode = statusCode
        self.start = start
        self.count = count
        self.sendsBody = sendsBody
        self.headerFields = headerFields
    }

    /// A strong entity tag for a source version: the version itself when every character may
    /// stand in one (RFC 9110 `etagc`), otherwise a 64-bit FNV-1a digest of it, so any token
    /// becomes a valid header value and equal versions give equal tags.
    static func entityTag(for version: String?) -> String? {
        guard let version, !version.isEmpty else { return nil }
        let allowed = version.utf8.allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) }
        if allowed { return "\"\(version)\"" }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in version.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "\"fnv-\(String(hash, radix: 16))\""
    }
}
