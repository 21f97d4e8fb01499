import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPReply {
    /// The most an error message keeps of a body.
    static let maxMessageLength = 200

    /// At most one short line of the body, for error messages: ``message(of:contentType:statusCode:)``.
    var message: String? {
        Self.message(of: body, contentType: header("content-type"), statusCode: statusCode)
    }

    /// At most one short line of an answer's `body`, for error messages, which are printed as
    /// one line: the first non-blank line of a text body, cut at ``maxMessageLength``
    /// characters, with control characters made spaces. Of an HTML page only its `<title>`, and
    /// not even that when it merely repeats the status ("403 Forbidden"): a web server's error
    /// page is markup around the status line the error already shows. Nothing of a binary body.
    static func message(of body: Data, contentType: String?, statusCode: Int) -> String? {
        var text = String(decoding: body.prefix(8192), as: UTF8.self)
        // A character cut where the decoded part (or the kept body) ends is not binary.
        while text.last == "\u{FFFD}" {
            text.removeLast()
        }
        guard !text.contains("\u{FFFD}"), !text.contains("\u{0}") else { return nil }
        let isHTML = contentType?.lowercased().contains("html") == true
            || text.drop(while: \.isWhitespace).prefix(14).lowercased().hasPrefix("<!doctype html")
            || text.drop(while: \.isWhitespace).prefix(5).lowercased() == "<html"
        let line: String
        if isHTML {
            guard let title = title(of: text), !repeats(statusCode, title) else { return nil }
            line = title
        } else {
            let lines = text.split(whereSeparator: \.isNewline)
            guard let first = lines.first(where: { !$0.allSatisfy(\.isWhitespace) }) else { return nil }
            line = String(first)
        }
        let clean = String(line.map { isControl($0) ? " " : $0 }).trimmingCharacters(in: .whitespaces)
        guard !clean.isEmpty else { return nil }
        return clean.count > maxMessageLength ? clean.prefix(maxMessageLength) + "…" : clean
    }

    private static func isControl(_ character: Character) -> Bool {
        character.unicodeScalars.contains { $0.properties.generalCategory == .control }
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
