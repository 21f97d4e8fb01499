import CBlobStreamIntrinsics

/// The checksum algorithms BlobStream computes. Raw values are the names the tus checksum
/// extension uses in `Upload-Checksum` and `Tus-Checksum-Algorithm` (`sha1`, `md5`, ...).
public enum ChecksumAlgorithm: String, Sendable, CaseIterable, CustomStringConvertible {
    /// SHA-256 (FIPS 180-4), 32 bytes. What dedup, S3 and most servers want.
    case sha256
    /// SHA-1 (FIPS 180-4), 20 bytes. The algorithm every tus server supports.
    case sha1
    /// MD5 (RFC 1321), 16 bytes. For `Content-MD5` and legacy servers; not for security.
    case md5
    /// CRC-32 as in zlib, gzip, PNG and Ethernet (IEEE 802.3), 4 bytes.
    case crc32
    /// CRC-32C (Castagnoli, iSCSI), 4 bytes. What GCS and S3 use for integrity.
    case crc32c
    /// CRC-64/NVME, 8 bytes. S3's `CRC64NVME`, the checksum of its full-object uploads.
    case crc64nvme

    /// Looks an algorithm up by name, ignoring case and dashes (`"SHA-256"`, `"sha256"`,
    /// `"CRC32C"`), or returns `nil` for a name BlobStream does not implement.
    public init?(name: String) {
        let normalized = name.lowercased().replacingOccurrences(of: "-", with: "")
        self.init(rawValue: normalized)
    }

    /// The name used on the wire and on the command line (the raw value).
    public var name: String { rawValue }

    /// The ``name``.
    public var description: String { rawValue }

    /// How many bytes a digest of this algorithm has.
    public var digestByteCount: Int {
        switch self {
        case .sha256: return 32
        case .sha1: return 20
        case .md5: return 16
        case .crc32, .crc32c: return 4
        case .crc64nvme: return 8
        }
    }

    /// Whether this CPU runs the algorithm on dedicated instructions (SHA-NI, SSE4.2 `crc32`,
    /// PCLMULQDQ) rather than portable code. MD5 never is: no CPU has MD5 instructions.
    public var isHardwareAccelerated: Bool {
        let features = bs_cpu_features()
        switch self {
        case .sha256, .sha1: return features & UInt32(BS_CPU_SHA) != 0
        case .md5: return false
        case .crc32, .crc64nvme: return features & UInt32(BS_CPU_PCLMUL) != 0
        case .crc32c: return features & UInt32(BS_CPU_SSE42) != 0
        }
    }

    /// A new, empty checksum of this algorithm.
    public func makeChecksum() -> any Checksum {
        makeChecksum(implementation: .fastest)
    }

    /// A new, empty checksum that uses `implementation`; tests use `.portable` to compare the
    /// accelerated code with the portable code.
    func makeChecksum(implementation: ChecksumImplementation) -> any Checksum {
        switch self {
        case .sha256: return SHA256(implementation: implementation)
        case .sha1: return SHA1(implementation: implementation)
        case .md5: return MD5(implementation: implementation)
        case .crc32: return CRC32(implementation: implementation)
        case .crc32c: return CRC32C(implementation: implementation)
        case .crc64nvme: return CRC64NVME(implementation: implementation)
        }
    }
}

/// Which code computes a checksum.
enum ChecksumImplementation: Sendable {
    /// The CPU's dedicated instructions where it has them, else portable code.
    case fastest
    /// Portable code even where the CPU could do better.
    case portable

    /// The `portable` argument of the C kernels.
    var portableFlag: Int32 { self == .portable ? 1 : 0 }
}
