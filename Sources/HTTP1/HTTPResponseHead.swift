import Foundation

/// The status line and header fields of one HTTP/1.x response, with the fields that frame its
/// body decoded. The HTTP source's URLSession transport builds one from its `HTTPURLResponse`,
/// so that both of its transports are held to the same rules.
package struct HTTPResponseHead: Sendable, Equatable {
    /// The status code, e.g. 206.
    package var statusCode: Int
    /// The protocol version of the status line, e.g. "HTTP/1.1".
    package var version: String
    /// Header fields by lowercased name; repeated fields are joined with ", ".
    package var fields: [String: String]

    /// How many header field lines the head had (repeated names counted each time).
    package var fieldLineCount: Int
    /// The bytes of its header fields, about as they were on the wire.
    package var fieldBytes: Int

    /// The most header field lines accepted in a response head.
    package static let maxFieldLines = 100
    /// The most bytes of a response head accepted; the head reader stops reading there.
    package static let maxHeadBytes = 64 * 1024

    /// Creates a head from `(name, value)` pairs in any case; repeated names are joined.
    package init(statusCode: Int, version: String = "HTTP/1.1", fields: some Sequence<(String, String)>) {
        self.version = version
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

    /// Parses a response head, or returns `nil`; see ``parse(_:)``.
    package init?(parsing bytes: some Collection<UInt8>) {
        guard let head = try? Self.parse(bytes) else { return nil }
        self = head
    }

    /// Parses a response head: the status line and the header lines, without the blank line that
    /// ends it. Refuses what is not an HTTP/1.x response head, or could be read two ways: a
    /// status code that is not three digits, a bare CR, LF or NUL inside a line (another parser
    /// may end the line there and see a field this one does not), a line without a colon or
    /// name, or a folded line (`obs-fold`) before any field. A folded line after a field is
    /// joined to it with a space, as RFC 9112 §5.2 asks of a user agent.
    /// - Throws: ``HTTP1Error/protocolViolation(reason:)`` naming the line.
    package static func parse(_ bytes: some Collection<UInt8>) throws(HTTP1Error) -> HTTPResponseHead {
        guard let text = String(bytes: bytes, encoding: .isoLatin1) else { throw malformed("response head", "") }
        var lines = text.components(separatedBy: "\r\n")
        if let bad = lines.first(where: { $0.contains { $0 == "\r" || $0 == "\n" || $0 == "\0" } }) {
            throw malformed("line (a bare CR, LF or NUL)", bad)
        }
        let status = lines.removeFirst()
        let statusLine = status.split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), statusLine[1].count == 3,
              let code = Self.decimal(statusLine[1]), code >= 100 else { throw malformed("status line", status) }
        var fields: [(String, String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t" {
                guard let last = fields.popLast() else { throw malformed("folded line before any field", line) }
                fields.append((last.0, last.1 + " " + line.trimmingCharacters(in: .whitespaces)))
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { throw malformed("header line", line) }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            // A name is a token, nothing around it (RFC 9112 §5.1): `Content-Length : 5` is one
            // framing to us and another, or none, to a proxy on the way, so it is refused.
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(Self.isTokenCharacter) else {
                throw malformed("field name (a token, with nothing between it and its colon)", line)
            }
            fields.append((name, value))
        }
        return HTTPResponseHead(statusCode: Int(code), version: String(statusLine[0]), fields: fields)
    }

    /// RFC 9110's `tchar`.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII else { return false }
        return ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }

    private static func malformed(_ what: String, _ line: String) -> HTTP1Error {
        .protocolViolation(reason: "malformed \(what) \"\(line.prefix(100))\"")
    }

    /// Whether this is an interim (1xx) answer that another answer follows: every 1xx but
    /// 101 (Switching Protocols), after which the connection no longer speaks HTTP/1.1.
    package var isInterim: Bool { (100...199).contains(statusCode) && statusCode != 101 }

    /// Whether the server keeps the connection open for another HTTP/1.1 request after this
    /// answer: HTTP/1.1 unless it says `Connection: close`, HTTP/1.0 only if it says
    /// `keep-alive`; never after `101 Switching Protocols`, past which the connection speaks
    /// another protocol.
    package var keepsConnection: Bool {
        if statusCode == 101 { return false }
        let tokens = (self["connection"] ?? "").lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("close") { return false }
        return version != "HTTP/1.0" || tokens.contains("keep-alive")
    }

    /// The value of the field `name` (any case).
    package subscript(_ name: String) -> String? { fields[name.lowercased()] }

    /// `Content-Length`, when present and valid. Repeated fields (joined with commas) count only
    /// when they all agree, as RFC 9110 §8.6 allows.
    package var contentLength: Int64? {
        guard let field = self["content-length"] else { return nil }
        let values = Set(field.split(separator: ",", omittingEmptySubsequences: false)
            .map { Self.decimal($0.trimmingCharacters(in: .whitespaces)) })
        guard values.count == 1, let value = values.first ?? nil else { return nil }
        return value
    }

    /// A non-negative decimal of digits only (`Int64("+5")` would accept a sign), or `nil`.
    package static func decimal(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// The transfer codings of `Transfer-Encoding`, in order, lowercased, without parameters
    /// and without `version` (which means none).
    package var transferCodings: [String] {
        guard let field = self["transfer-encoding"] else { return [] }
        return field.split(separator: ",").map {
            String($0.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
                .trimmingCharacters(in: .whitespaces).lowercased()
        }.filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Whether the body is sent in chunked transfer coding, and in no other.
    package var isChunked: Bool { transferCodings == ["chunked"] }

    /// The content codings of `Content-Encoding`, lowercased, without `identity`.
    package var contentCodings: [String] {
        guard let field = self["content-encoding"] else { return [] }
        return field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Why this head is too large to accept (more than ``maxFieldLines`` field lines or
    /// ``maxHeadBytes`` bytes of fields), or `nil`. The head reader refuses such a head
    /// whatever its status.
    package var sizeViolation: String? {
        if fieldLineCount > Self.maxFieldLines {
            return "the response head has \(fieldLineCount) header fields, more than \(Self.maxFieldLines)"
        }
        if fieldBytes > Self.maxHeadBytes {
            return "the response head is longer than \(Self.maxHeadBytes) bytes"
        }
        return nil
    }

    /// Why the body of this answer cannot be delimited safely, or `nil` when it can. The body
    /// decoder refuses such a head, and the HTTP source holds its URLSession transport to it too:
    /// - at most ``maxFieldLines`` field lines and ``maxHeadBytes`` bytes of fields;
    /// - no transfer coding but `chunked` (and `identity`): any other (`gzip, chunked`) would
    ///   deliver its coded bytes as the blob's;
    /// - no `Transfer-Encoding` together with `Content-Length` (RFC 9112 §6.3: a sign of
    ///   response splitting, to be handled as an error);
    /// - a `Content-Length` of digits only, repeated only with the same value (RFC 9110 §8.6);
    ///   reading an unusable one until the close could pass a cut body off as whole.
    package var framingViolation: String? {
        if let sizeViolation { return sizeViolation }
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
        return nil
    }

    /// `Content-Range: bytes first-last/total` of a 206 answer (`total` is `nil` for `*`).
    package var contentRange: (first: Int64, last: Int64, total: Int64?)? {
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
    package var unsatisfiedRangeTotal: Int64? {
        guard let value = self["content-range"], value.lowercased().hasPrefix("bytes */") else { return nil }
        return Self.decimal(value.dropFirst(8))
    }

    /// The `Location` of a redirect (a status of ``HTTPRedirectPolicy/statuses``), as sent.
    package var redirectLocation: String? {
        guard HTTPRedirectPolicy.statuses.contains(statusCode) else { return nil }
        return self["location"]
    }
}
