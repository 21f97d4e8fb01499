/// The rules asset identifiers must follow before any store looks them up.
///
/// Identifiers arrive from URLs (`asset://?id=…`), command lines and databases, so they are
/// untrusted. ``validate(_:)`` holds for every store; ``validateFileName(_:)`` is the stricter
/// rule for stores that use identifiers as file names (``DirectoryAssetStore``), where an
/// identifier must never name anything outside the store's folder.
public enum AssetIdentifier {
    /// The longest identifier accepted, in UTF-8 bytes.
    public static let maximumLength = 1024

    /// The longest file-name identifier accepted, in UTF-8 bytes: the usual file-name limit.
    public static let maximumFileNameLength = 255

    /// Accepts any non-empty identifier of at most ``maximumLength`` bytes without NUL or other
    /// control characters (which could cut or disguise it in logs, paths and C APIs).
    /// - Throws: ``AssetStoreError/invalidIdentifier(_:reason:)`` saying which rule failed.
    public static func validate(_ identifier: String) throws(AssetStoreError) {
        if identifier.isEmpty {
            throw .invalidIdentifier(identifier, reason: "it is empty")
        }
        if identifier.utf8.count > maximumLength {
            throw .invalidIdentifier(identifier, reason: "it is longer than \(maximumLength) bytes")
        }
        if identifier.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw .invalidIdentifier(identifier, reason: "it contains NUL or another control character")
        }
    }

    /// Accepts identifiers that are plain file names: what ``validate(_:)`` accepts, at most
    /// ``maximumFileNameLength`` bytes, without `/` or `\`, not `.` or `..`, not starting with
    /// `.` (reserved for a store's temporary files), and without `%`. URLs are percent-decoded
    /// once before identifiers are checked, so a `%` left over can only come from double
    /// encoding (`%252e%252e`), an attempt to smuggle `..` or `/` past one decoding layer.
    /// - Throws: ``AssetStoreError/invalidIdentifier(_:reason:)`` saying which rule failed.
    public static func validateFileName(_ identifier: String) throws(AssetStoreError) {
        try validate(identifier)
        if identifier.utf8.count > maximumFileNameLength {
            throw .invalidIdentifier(identifier, reason: "it is longer than \(maximumFileNameLength) bytes")
        }
        if identifier.contains("/") || identifier.contains("\\") {
            throw .invalidIdentifier(identifier, reason: "it contains a path separator")
        }
        if identifier == "." || identifier == ".." {
            throw .invalidIdentifier(identifier, reason: "it names a directory, not an asset")
        }
        if identifier.hasPrefix(".") {
            throw .invalidIdentifier(identifier, reason: "it starts with \".\", which is reserved for temporary files")
        }
        if identifier.contains("%") {
            throw .invalidIdentifier(identifier, reason: "it contains \"%\" (a percent-encoded form)")
        }
    }
}
