import BlobStream

/// HMAC-SHA256 (RFC 2104) on the package's own SHA-256: the one keyed hash Signature Version 4
/// needs, so the S3 client needs no crypto library.
enum HMACSHA256 {
    private static let blockSize = 64

    /// The 32-byte MAC of `message` under `key`.
    static func mac(key: [UInt8], message: some Sequence<UInt8>) -> [UInt8] {
        var block = key.count > blockSize ? SHA256.digest(of: key).bytes : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(Array(message))
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        outer.update(inner.finalize().bytes)
        return outer.finalize().bytes
    }

    /// The MAC of the UTF-8 bytes of `message`.
    static func mac(key: [UInt8], _ message: String) -> [UInt8] {
        mac(key: key, message: message.utf8)
    }
}
