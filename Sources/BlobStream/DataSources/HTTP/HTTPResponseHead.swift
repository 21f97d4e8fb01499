import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The status line and header fields of one HTTP response, with the few fields a range reader
/// needs decoded. Both transports produce one: the socket transport parses the bytes, the
/// URLSession transport converts its `HTTPURLResponse`.
struct HTTPResponseHead: Sendable, Equatable {
    /// The status code, e.g. 206.
    var statusCode: Int
    /// Header fields by lowercased name; repeated fields are joined with ", ".
    var fields: [String: String]

    /// Creates a head from `(name, value)` pairs in any case; repeated names are joined.
    init(statusCode: Int, fields: some Sequence<(String, String)>) {
        self.statusCode = statusCode
        var joined: [String: String] = [:]
        for (name, value) in fields {
            let key = name.lowercased()
            joined[key] = joined[key].map { "\($0), \(value)" } ?? value
        }
        self.fields = joined
    }

    init(_ response: HTTPURLResponse) {
        let fields = response.allHeaderFields.compactMap { name, value -> (String, String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        self.init(statusCode: response.statusCode, fields: fields)
    }

    /// Parses a response head: the status line and the header lines, without the blank line that
    /// ends it. Returns `nil` when it is not an HTTP/1.x response head.
    init?(parsing bytes: some Collection<UInt8>) {
        guard let text = String(bytes: bytes, encoding: .isoLatin1) else { return nil }
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."),
              let code = Int(statusLine[1]), (100...999).contains(code) else { return nil }
        var fields: [(String, String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return nil }
            fields.append((name, value))
        }
        self.init(statusCode: code, fields: fields)
    }

    /// The value of the field `name` (any case).
    subscript(_ name: String) -> String? { fields[name.lowercased()] }

    /// `Content-Length`, when present and valid. Repeated fields (joined with commas) count only
    /// when they all agree, as RFC 9110 §8.6 allows.
    var contentLength: Int64? {
        guard let field = self["content-length"] else { return nil }
        let values = Set(field.split(separator: ",").map { Int64($0.trimmingCharacters(in: .whitespaces)) })
        guard values.count == 1, let value = values.first ?? nil, value >= 0 else { return nil }
        return value
    }

    /// Whether a `Content-Length` is present but unusable (not a number, or repeated with
    /// different values). Reading such a body until the connection closes could hide a
    /// truncation, so the response is refused.
    var hasMalformedContentLength: Bool {
        self["content-length"] != nil && contentLength == nil && !isChunked
    }

    /// Whether the body is sent in chunked transfer coding.
    var isChunked: Bool {
        self["transfer-encoding"]?.lowercased().contains("chunked") ?? false
    }

    /// The content coding the server applied, unless it is none or `identity`. Byte ranges of an
    /// encoded body do not line up with the blob's bytes, so a reader refuses such a response.
    var contentCoding: String? {
        guard let coding = self["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
              !coding.isEmpty, coding != "identity" else { return nil }
        return coding
    }

    /// `Content-Range: bytes first-last/total` of a 206 answer (`total` is `nil` for `*`).
    var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = self["content-range"], value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
              first >= 0, last >= first else { return nil }
        let total = Int64(parts[1])
        if parts[1] != "*" && (total == nil || total! <= last) { return nil }
        return (first, last, total)
    }

    /// The total length in `Content-Range: bytes */total`, the form of a 416 answer.
    var unsatisfiedRangeTotal: Int64? {
        guard let value = self["content-range"], value.lowercased().hasPrefix("bytes */") else { return nil }
        return Int64(value.dropFirst(8))
    }

    /// What names this version of the blob for `If-Range`: a strong entity tag, or else the
    /// `Last-Modified` date (weak tags may not be used in `If-Range`), or `nil` when the server
    /// sends neither.
    var validator: String? {
        if let tag = self["etag"], !tag.hasPrefix("W/"), !tag.isEmpty { return tag }
        return self["last-modified"]
    }

    /// Whether this is a redirect that names where to go.
    var redirectLocation: String? {
        guard [301, 302, 303, 307, 308].contains(statusCode) else { return nil }
        return self["location"]
    }
}
