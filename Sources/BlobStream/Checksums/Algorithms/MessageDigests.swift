import CBlobStreamIntrinsics

// MD5, SHA-1 and SHA-256 share one C context layout and differ only in their C entry points,
// so each type is a thin, value-semantic wrapper around a `bs_md_context` (a plain C struct:
// copying the Swift value copies the whole running state).

/// SHA-256 (FIPS 180-4). Uses the SHA-NI instructions where the CPU has them.
public struct SHA256: Checksum {
    /// ``ChecksumAlgorithm/sha256``.
    public static let algorithm = ChecksumAlgorithm.sha256

    private var context = bs_md_context()

    /// Creates the digest state of zero bytes.
    public init() {
        self.init(implementation: .fastest)
    }

    init(implementation: ChecksumImplementation) {
        bs_sha256_init(&context, implementation.portableFlag)
    }

    /// Appends `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        bs_sha256_update(&context, base, bytes.count)
    }

    /// The 32-byte digest of the bytes passed so far.
    public func finalize() -> ChecksumDigest {
        var snapshot = context
        return finalDigest(Self.algorithm) { bs_sha256_final(&snapshot, $0) }
    }

    /// Forgets every byte passed so far (keeping the implementation).
    public mutating func reset() {
        bs_sha256_init(&context, Int32(context.portable))
    }
}

/// SHA-1 (FIPS 180-4). Uses the SHA-NI instructions where the CPU has them. Broken for
/// collision resistance; fine for integrity checks such as tus `Upload-Checksum`.
public struct SHA1: Checksum {
    /// ``ChecksumAlgorithm/sha1``.
    public static let algorithm = ChecksumAlgorithm.sha1

    private var context = bs_md_context()

    /// Creates the digest state of zero bytes.
    public init() {
        self.init(implementation: .fastest)
    }

    init(implementation: ChecksumImplementation) {
        bs_sha1_init(&context, implementation.portableFlag)
    }

    /// Appends `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        bs_sha1_update(&context, base, bytes.count)
    }

    /// The 20-byte digest of the bytes passed so far.
    public func finalize() -> ChecksumDigest {
        var snapshot = context
        return finalDigest(Self.algorithm) { bs_sha1_final(&snapshot, $0) }
    }

    /// Forgets every byte passed so far (keeping the implementation).
    public mutating func reset() {
        bs_sha1_init(&context, Int32(context.portable))
    }
}

/// MD5 (RFC 1321). Broken for security; use it only where a protocol demands it
/// (`Content-MD5`, legacy servers).
public struct MD5: Checksum {
    /// ``ChecksumAlgorithm/md5``.
    public static let algorithm = ChecksumAlgorithm.md5

    private var context = bs_md_context()

    /// Creates the digest state of zero bytes.
    public init() {
        self.init(implementation: .fastest)
    }

    init(implementation: ChecksumImplementation) {
        bs_md5_init(&context, implementation.portableFlag)
    }

    /// Appends `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        bs_md5_update(&context, base, bytes.count)
    }

    /// The 16-byte digest of the bytes passed so far.
    public func finalize() -> ChecksumDigest {
        var snapshot = context
        return finalDigest(Self.algorithm) { bs_md5_final(&snapshot, $0) }
    }

    /// Forgets every byte passed so far.
    public mutating func reset() {
        bs_md5_init(&context, Int32(context.portable))
    }
}

/// Lets `write` fill a digest-sized buffer and wraps it.
private func finalDigest(
    _ algorithm: ChecksumAlgorithm,
    _ write: (UnsafeMutablePointer<UInt8>) -> Void
) -> ChecksumDigest {
    var bytes = [UInt8](repeating: 0, count: algorithm.digestByteCount)
    bytes.withUnsafeMutableBufferPointer { write($0.baseAddress!) }
    return ChecksumDigest(validated: algorithm, bytes: bytes)
}
