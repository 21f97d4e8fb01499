/// Hides the passwords of URLs written into a message: an error names the URL that failed,
/// and one given as `http://user:password@host/` must not print its password into a
/// terminal, a log or a crash report.
package enum PasswordRedaction {
    /// `text` with the password of every `scheme://user:password@` in it replaced by `***`.
    package static func hidingPasswords(in text: String) -> String {
        guard text.contains("@") else { return text }
        var result = ""
        var rest = Substring(text)
        while let separator = rest.range(of: "://") {
            result += rest[..<separator.upperBound]
            rest = rest[separator.upperBound...]
            let authorityEnd = rest.firstIndex { "/?#\"' \t\n\r".contains($0) } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { continue }
            result += authority[...colon] + "***"
            rest = rest[at...]
        }
        return result + rest
    }
}
