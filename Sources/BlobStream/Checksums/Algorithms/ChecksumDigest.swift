import Foundation

/// The result of a ``Checksum``: its bytes, and the text forms protocols ask for.
///
/// CRCs are stored big-endian (most significant byte first), the order `crc32` tools print in
/// hex and that GCS (`x-goog-hash: crc32c=`) and tus (`Upload-Checksum`) expect in base64.
public struct ChecksumDigest: Sendable, Hashable, CustomStringConvertible {
    /// The algorithm that produced the digest.
    public let algorithm: ChecksumAlgorithm
    /// The digest, ``ChecksumAlgorithm/digestByteCount`` bytes long.
    public let bytes: [UInt8]

    /// Wraps `bytes` as a digest of `algorithm`, or returns `nil` if the length does not
    /// match ``ChecksumAlgorithm/digestByteCount``.
    public init?(algorithm: ChecksumAlgorithm, bytes: [UInt8]) {
        guard bytes.count == algorithm.digestByteCount else { return nil }
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// Parses a hexadecimal digest (either case, as `sha256sum` prints it), or returns `nil`
    /// for text that is not exactly ``ChecksumAlgorithm/digestByteCount`` bytes of hex.
    public init?(algorithm: ChecksumAlgorithm, hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * algorithm.digestByteCount else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// Parses a base64 digest (as in `Upload-Checksum` or `x-goog-hash`), or returns `nil` for
    /// text that is not base64 of exactly ``ChecksumAlgorithm/digestByteCount`` bytes.
    public init?(algorithm: ChecksumAlgorithm, base64: String) {
        guard let data = Data(base64Encoded: base64) else { return nil }
        self.init(algorithm: algorithm, bytes: [UInt8](data))
    }

    /// For the checksum types, whose digests have the right length by construction.
    init(validated algorithm: ChecksumAlgorithm, bytes: [UInt8]) {
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// Lowercase hexadecimal, as printed by `sha256sum`, `md5sum` and friends.
    public var hex: String {
        Self.hex(bytes)
    }

    /// `bytes` in lowercase hexadecimal: the one spelling of digests and MACs in the package.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Standard base64 with padding, as tus `Upload-Checksum` and S3/GCS checksum headers use.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// The digest bytes as `Data`.
    public var data: Data { Data(bytes) }

    /// The lowercase hex form (``hex``).
    public var description: String { hex }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
