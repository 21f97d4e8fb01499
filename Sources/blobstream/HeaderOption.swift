internal import HTTP1

/// The `-H`/`--header 'Name: value'` option (curl's), repeatable: header fields for the
/// requests a command sends to the URL it names. Checked before anything is sent: a field
/// with a line break or NUL, a name that is not an HTTP token, or a field the protocol owns is
/// a usage error.
enum HeaderOption {
    /// The option's names, for the commands' `valueOptions`.
    static let names: Set<String> = ["-H", "--header"]

    /// The fields given with `-H` and `--header`, in order (a later field of the same name,
    /// in any case, replaces an earlier one).
    /// - Throws: ``CommandFailure/usage(_:)`` for a field without a colon, an empty or invalid
    ///   name, a value with CR, LF or NUL, or a field `owner` owns.
    static func fields(_ arguments: ParsedArguments, owner: HTTPFieldOwner) throws(CommandFailure) -> [String: String] {
        var fields: [String: String] = [:]
        for (option, text) in arguments.orderedValues where names.contains(option) {
            let (name, value) = try parse(text, owner: owner)
            if let earlier = fields.keys.first(where: { $0.lowercased() == name.lowercased() }) {
                fields[earlier] = nil
            }
            fields[name] = value
        }
        return fields
    }

    /// `Name: value` → (`Name`, `value`), the value's surrounding blanks removed.
    static func parse(_ text: String, owner: HTTPFieldOwner) throws(CommandFailure) -> (String, String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw .usage("-H takes 'Name: value', not '\(printable(text))'")
        }
        let name = String(text[..<colon])
        let value = String(text[text.index(after: colon)...]).trimmingBlanks()
        guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
            throw .usage("-H '\(printable(text))': '\(printable(name))' is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)")
        }
        guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) else {
            throw .usage("-H \(name): the value contains a line break or NUL")
        }
        guard !owner.owns(name) else {
            throw .usage("-H \(name): the protocol sets this header itself")
        }
        return (name, value)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// `text` with control characters shown as `?`, for messages on one line.
    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value < 32 || $0.value == 127 ? "?" : Character($0) })
    }
}

private extension String {
    func trimmingBlanks() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
