import Foundation

/// Encodes and decodes the tus `Upload-Metadata` header: comma-separated `key base64(value)`
/// pairs. Keys are ASCII without spaces or commas; values are any UTF-8 text.
enum TusMetadata {
    /// The header value for `metadata`, keys sorted so the header is reproducible.
    /// - Throws: ``BlobUploadError/invalidMetadata(key:reason:)`` for an empty key or one with a
    ///   space, comma or non-ASCII character.
    static func encode(_ metadata: [String: String]) throws(BlobUploadError) -> String {
        var pairs: [String] = []
        for key in metadata.keys.sorted() {
            if key.isEmpty {
                throw .invalidMetadata(key: key, reason: "keys must not be empty")
            }
            if key.unicodeScalars.contains(where: { !$0.isASCII || $0 == " " || $0 == "," || $0.value < 0x21 }) {
                throw .invalidMetadata(key: key, reason: "keys must be printable ASCII without spaces or commas")
            }
            let value = Data(metadata[key, default: ""].utf8).base64EncodedString()
            pairs.append(value.isEmpty ? key : "\(key) \(value)")
        }
        return pairs.joined(separator: ",")
    }

    /// The pairs of a header value; malformed pairs are skipped.
    static func decode(_ header: String) -> [String: String] {
        var metadata: [String: String] = [:]
        for pair in header.split(separator: ",") {
            let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            guard let key = parts.first else { continue }
            if parts.count == 1 {
                metadata[String(key)] = ""
            } else if parts.count == 2, let data = Data(base64Encoded: String(parts[1])),
                      let value = String(data: data, encoding: .utf8) {
                metadata[String(key)] = value
            }
        }
        return metadata
    }
}
