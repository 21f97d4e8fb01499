import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an error answer's body says, in one short line for a message that already names the
/// status: every client of the package (uploads, S3, the HTTP source) words it so.
package enum HTTPErrorMessage {
    /// The most a message keeps of a body.
    package static let maxLength = 200

    /// The most of a body that is looked at; a client keeps no more of an error body.
    package static let maxBodyBytes = 8192

    /// At most one short line of an answer's `body`, for error messages, which are printed as
    /// one line: the first non-blank line of a text body, cut at ``maxLength`` characters, with
    /// control characters made spaces. Of an XML error document (S3's, GCS's, Azure's) its
    /// `Code` and `Message` ("AccessDenied: Request has expired"). Of an HTML page only its
    /// `<title>`, and not even that when it merely repeats the status ("403 Forbidden"): a web
    /// server's error page is markup around the status line the error already shows. Nothing
    /// of a binary body.
    package static func message(of body: some Collection<UInt8>, contentType: String?, statusCode: Int) -> String? {
        var text = String(decoding: body.prefix(maxBodyBytes), as: UTF8.self)
        // A character cut where the decoded part (or the kept body) ends is not binary.
        while text.last == "\u{FFFD}" {
            text.removeLast()
        }
        guard !text.contains("\u{FFFD}"), !text.contains("\u{0}") else { return nil }
        let isHTML = contentType?.lowercased().contains("html") == true
            || text.drop(while: \.isWhitespace).prefix(14).lowercased().hasPrefix("<!doctype html")
            || text.drop(while: \.isWhitespace).prefix(5).lowercased() == "<html"
        let line: String
        if let error = xmlError(in: text) {
            line = error
        } else if isHTML {
            guard let title = title(of: text), !repeats(statusCode, title) else { return nil }
            line = title
        } else {
            let lines = text.split(whereSeparator: \.isNewline)
            guard let first = lines.first(where: { !$0.allSatisfy(\.isWhitespace) }) else { return nil }
            line = String(first)
        }
        let clean = printable(line).trimmingCharacters(in: .whitespaces)
        guard !clean.isEmpty else { return nil }
        return clean.unicodeScalars.count > maxLength ? String(String.UnicodeScalarView(clean.unicodeScalars.prefix(maxLength))) + "…" : clean
    }

    /// `line` safe to print on a terminal: control characters made spaces, and invisible format
    /// characters (bidirectional overrides, zero-width ones) dropped, so the message shows what
    /// it says and nothing can reorder or hide it.
    private static func printable(_ line: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in line.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control: scalars.append(" ")
            case .format: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars)
    }

    /// `Code: Message` of an XML error document (`<Error><Code>…</Code><Message>…</Message>`),
    /// either alone when the other is missing; `nil` for any other text.
    private static func xmlError(in text: String) -> String? {
        let start = text.drop(while: \.isWhitespace)
        guard start.hasPrefix("<?xml") || start.hasPrefix("<Error") else { return nil }
        func element(_ name: String) -> String? {
            guard let open = text.range(of: "<\(name)>"), let close = text[open.upperBound...].range(of: "</\(name)>") else { return nil }
            let words = text[open.upperBound..<close.lowerBound].split(whereSeparator: \.isWhitespace)
            return words.isEmpty ? nil : unescaped(words.joined(separator: " "))
        }
        switch (element("Code"), element("Message")) {
        case (let code?, let message?): return "\(code): \(message)"
        case (let code?, nil): return code
        case (nil, let message?): return message
        case (nil, nil): return nil
        }
    }

    /// `text` with XML's five predefined entities replaced (`&amp;` last, so `&amp;lt;` stays `&lt;`).
    private static func unescaped(_ text: String) -> String {
        [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&amp;", "&")].reduce(text) {
            $0.replacingOccurrences(of: $1.0, with: $1.1)
        }
    }

    /// The text of the page's `<title>`, whitespace collapsed.
    private static func title(of page: String) -> String? {
        guard let open = page.range(of: "<title", options: .caseInsensitive),
              let start = page[open.upperBound...].firstIndex(of: ">"),
              let close = page[start...].range(of: "</title", options: .caseInsensitive) else { return nil }
        let words = page[page.index(after: start)..<close.lowerBound].split(whereSeparator: \.isWhitespace)
        return words.isEmpty ? nil : words.joined(separator: " ")
    }

    /// Whether `title` says no more than the status line: "403 Forbidden", "Forbidden".
    private static func repeats(_ statusCode: Int, _ title: String) -> Bool {
        let reason = HTTPURLResponse.localizedString(forStatusCode: statusCode).lowercased()
        let lowered = title.lowercased()
        return lowered.hasPrefix(String(statusCode)) || lowered == reason
    }
}
