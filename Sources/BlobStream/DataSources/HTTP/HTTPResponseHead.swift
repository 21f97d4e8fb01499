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

    /// How many header field lines the head had (repeated names counted each time).
    var fieldLineCount: Int
    /// The bytes of its header fields, about as they were on the wire.
    var fieldBytes: Int

    /// The most header field lines accepted in a response head.
    static let maxFieldLines = 100
    /// The most bytes of a response head accepted; the socket transport stops reading there.
    static let maxHeadBytes = 64 * 1024

    /// Creates a head from `(name, value)` pairs in any case; repeated names are joined.
    init(statusCode: Int, fields: some Sequence<(String, String)>) {
        self.statusCode = statusCode
        var joined: [String: String] = [:]
        var lines = 0
        var bytes = 0
        for (name, value) in fields {
            let key = name.lowercased()
            joined[key] = joined[key].map { "\($0), \(value)" } ?? value
            lines += 1
            bytes += name.utf8.count + value.utf8.count + 4
        }
        self.fields = joined
        fieldLineCount = lines
        fieldBytes = bytes
    }

    init(_ response: HTTPURLResponse) {
        let fields = response.allHeaderFields.compactMap { name, value -> (String, String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        self.init(statusCode: response.statusCode, fields: fields)
    }

    /// Parses a response head: the status line and the header lines, without the blank line that
    /// ends it. Returns `nil` when it is not an HTTP/1.x response head, or could be read two ways:
    /// a status code that is not three digits, a bare CR, LF or NUL inside a line (another parser
    /// may end the line there and see a field this one does not), a line without a colon or
    /// name, or a folded line (`obs-fold`) before any field. A folded line after a field is
    /// joined to it with a space, as RFC 9112 §5.2 asks of a user agent.
    init?(parsing bytes: some Collection<UInt8>) {
        guard let text = String(bytes: bytes, encoding: .isoLatin1) else { return nil }
        var lines = text.components(separatedBy: "\r\n")
        guard !lines.contains(where: { $0.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" } }) else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), statusLine[1].count == 3,
              let code = Self.decimal(statusLine[1]), code >= 100 else { return nil }
        var fields: [(String, String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t" {
                guard let last = fields.popLast() else { return nil }
                fields.append((last.0, last.1 + " " + line.trimmingCharacters(in: .whitespaces)))
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return nil }
            fields.append((name, value))
        }
        self.init(statusCode: Int(code), fields: fields)
    }

    /// The value of the field `name` (any case).
    subscript(_ name: String) -> String? { fields[name.lowercased()] }

    /// `Content-Length`, when present and valid. Repeated fields (joined with commas) count only
    /// when they all agree, as RFC 9110 §8.6 allows.
    var contentLength: Int64? {
        guard let field = self["content-length"] else { return nil }
        let values = Set(field.split(separator: ",", omittingEmptySubsequences: false)
            .map { Self.decimal($0.trimmingCharacters(in: .whitespaces)) })
        guard values.count == 1, let value = values.first ?? nil else { return nil }
        return value
    }

    /// A non-negative decimal of digits only (`Int64("+5")` would accept a sign), or `nil`.
    static func decimal(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// The transfer codings of `Transfer-Encoding`, in order, lowercased, without parameters
    /// and without `identity` (which means none).
    var transferCodings: [String] {
        guard let field = self["transfer-encoding"] else { return [] }
        return field.split(separator: ",").map {
            String($0.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
                .trimmingCharacters(in: .whitespaces).lowercased()
        }.filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Whether the body is sent in chunked transfer coding, and in no other.
    var isChunked: Bool { transferCodings == ["chunked"] }

    /// The content codings of `Content-Encoding`, lowercased, without `identity`.
    var contentCodings: [String] {
        guard let field = self["content-encoding"] else { return [] }
        return field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Why the body of this head cannot be the blob's bytes, or cannot be delimited safely, or
    /// `nil` when it can. Both transports are held to this, in ``HTTPRangeResponse``:
    /// - at most ``maxFieldLines`` field lines and ``maxHeadBytes`` bytes of fields;
    /// - no transfer coding but `chunked` (and `identity`): any other (`gzip, chunked`) would
    ///   deliver its coded bytes as the blob's;
    /// - no `Transfer-Encoding` together with `Content-Length` (RFC 9112 §6.3: a sign of
    ///   response splitting, to be handled as an error);
    /// - a `Content-Length` of digits only, repeated only with the same value (RFC 9110 §8.6);
    ///   reading an unusable one until the close could pass a cut body off as whole;
    /// - no content coding but `identity`: a range of an encoded representation is not a range
    ///   of the blob (the request says `Accept-Encoding: identity`).
    var framingViolation: String? {
        if fieldLineCount > Self.maxFieldLines {
            return "the response head has \(fieldLineCount) header fields, more than \(Self.maxFieldLines)"
        }
        if fieldBytes > Self.maxHeadBytes {
            return "the response head is longer than \(Self.maxHeadBytes) bytes"
        }
        let codings = transferCodings
        if let other = codings.first(where: { $0 != "chunked" }) ?? (codings.count > 1 ? "chunked" : nil) {
            return "the server applied the transfer coding \"\(other)\" (Transfer-Encoding: \(self["transfer-encoding"] ?? "")); only chunked is accepted"
        }
        if !codings.isEmpty && self["content-length"] != nil {
            return "the response has both Transfer-Encoding and Content-Length"
        }
        if self["content-length"] != nil && contentLength == nil {
            return "the server sent an invalid or conflicting Content-Length (\(self["content-length"] ?? ""))"
        }
        if let coding = contentCodings.first {
            return "the server applied the content coding \"\(coding)\" despite Accept-Encoding: identity, so its bytes are not the blob's"
        }
        return nil
    }

    /// `Content-Range: bytes first-last/total` of a 206 answer (`total` is `nil` for `*`).
    var contentRange: (first: Int64, last: Int64, total: Int64?)? {
        guard let value = self["content-range"], value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Self.decimal(bounds[0]), let last = Self.decimal(bounds[1]),
              last >= first else { return nil }
        let total = Self.decimal(parts[1])
        if parts[1] != "*" && (total == nil || total! <= last) { return nil }
        return (first, last, total)
    }

    /// The total length in `Content-Range: bytes */total`, the form of a 416 answer.
    var unsatisfiedRangeTotal: Int64? {
        guard let value = self["content-range"], value.lowercased().hasPrefix("bytes */") else { return nil }
        return Self.decimal(value.dropFirst(8))
    }

    /// Whether this is a redirect that names where to go.
    var redirectLocation: String? {
        guard [301, 302, 303, 307, 308].contains(statusCode) else { return nil }
        return self["location"]
    }
}
