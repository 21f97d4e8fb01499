/// The check of header fields before they are written: a request head is written verbatim,
/// so a CR or LF in a value would end the field and let the rest inject fields (or a whole
/// second request), a NUL would cut it short, and a name that is not an HTTP token (a ':', a
/// space) would parse as another field.
package enum HTTPFieldCheck {
    /// Why the field `name: value` cannot be written as it is, or `nil` when it can.
    package static func problem(name: String, value: String) -> Problem? {
        if !isToken(name) { return .name }
        if value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) { return .value }
        return nil
    }

    /// Whether `text` is an HTTP token (RFC 9110 §5.6.2), as a method and a field name must be.
    package static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// The first unusable field of `fields` in name order, and why, or `nil`.
    package static func firstProblem(in fields: some Sequence<(key: String, value: String)>) -> (name: String, problem: Problem)? {
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            if let problem = problem(name: name, value: value) { return (name, problem) }
        }
        return nil
    }

    /// An unusable field, as thrown by ``HTTPRequestHead/init(method:url:checking:setting:)``.
    package struct Failure: Error, Equatable, Sendable {
        /// The field's name.
        package var name: String
        /// What is wrong with it.
        package var problem: Problem

        /// The failure of the field `name`.
        package init(name: String, problem: Problem) {
            self.name = name
            self.problem = problem
        }
    }

    /// What is wrong with a field.
    package enum Problem: Sendable, Equatable {
        /// The name is empty or not an HTTP token.
        case name
        /// The value contains CR, LF or NUL.
        case value
        /// The request's method (the failure's name) is not an HTTP token: written into the
        /// request line, a CR or LF in it would end that line early.
        case method
    }

    /// Whether `byte` may appear in a token (RFC 9110 §5.6.2 `tchar`).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
