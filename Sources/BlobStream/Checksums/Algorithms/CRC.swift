import CBlobStreamIntrinsics

/// A cyclic redundancy check over the bytes passed so far, computed by one of the package's
/// kernels (``CRC32``, ``CRC32C``, ``CRC64NVME``): hardware-accelerated where the CPU can
/// (PCLMULQDQ folding, SSE4.2 `crc32`), tables elsewhere.
///
/// CRCs of adjacent pieces combine (``combine(_:_:lengthB:)``) into the CRC of the whole
/// without the bytes: what lets parts hashed separately (S3 multipart parts, parallel readers)
/// yield the CRC of the whole without reading it again.
public struct CRC<Kernel: CRCKernel>: Checksum {
    /// The kernel's algorithm.
    public static var algorithm: ChecksumAlgorithm { Kernel.algorithm }

    /// The CRC of the bytes passed so far (0 for no bytes), as zlib and awscrt return it.
    public private(set) var value: Kernel.Value = 0
    private let implementation: ChecksumImplementation

    /// Creates the CRC of zero bytes.
    public init() {
        self.init(implementation: .fastest)
    }

    init(implementation: ChecksumImplementation) {
        self.implementation = implementation
    }

    /// Appends `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        value = Kernel.update(value, base, bytes.count, portable: implementation.portableFlag)
    }

    /// ``value`` as big-endian bytes (four or eight): the bytes S3 base64-encodes in its
    /// `x-amz-checksum-*` fields.
    public func finalize() -> ChecksumDigest {
        let width = Kernel.Value.bitWidth / 8
        let bytes = (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * (width - 1 - $0))) }
        return ChecksumDigest(validated: Self.algorithm, bytes: bytes)
    }

    /// Forgets every byte passed so far.
    public mutating func reset() {
        value = 0
    }

    /// The CRC of A followed by B, from A's CRC `crcA`, B's CRC `crcB` and B's length in bytes
    /// `lengthB` (zlib's `crc32_combine`), in O(log `lengthB`) time and without the bytes.
    /// `lengthB` must not be negative; with `lengthB` 0 (so `crcB` 0) the result is `crcA`.
    public static func combine(_ crcA: Kernel.Value, _ crcB: Kernel.Value, lengthB: Int64) -> Kernel.Value {
        precondition(lengthB >= 0, "a length cannot be negative")
        return Kernel.combine(crcA, crcB, lengthB: UInt64(lengthB))
    }
}

/// The C functions behind one ``CRC``: only the package's own kernels conform.
public protocol CRCKernel: Sendable {
    /// The CRC's width.
    associatedtype Value: FixedWidthInteger & UnsignedInteger & Sendable
    /// The algorithm it computes.
    static var algorithm: ChecksumAlgorithm { get }
    /// `crc` extended with `count` bytes at `bytes`; `portable` (1) forbids CPU extensions.
    static func update(_ crc: Value, _ bytes: UnsafeRawPointer, _ count: Int, portable: Int32) -> Value
    /// The CRC of A then B from their CRCs and B's length.
    static func combine(_ crcA: Value, _ crcB: Value, lengthB: UInt64) -> Value
}

/// CRC-32 as computed by zlib's `crc32()` (IEEE 802.3 polynomial, reflected, inverted), so a
/// value matches Python's `zlib.crc32`, gzip trailers and PNG chunks. The check value of
/// `"123456789"` is `0xCBF43926`. PCLMULQDQ folding where the CPU has it (about ten times the
/// speed of tables).
public typealias CRC32 = CRC<CRC32Kernel>

/// CRC-32C (Castagnoli polynomial, reflected, inverted), as used by iSCSI, ext4, GCS and S3.
/// The check value of `"123456789"` is `0xE3069283`. The SSE4.2 `crc32` instruction on three
/// interleaved streams where the CPU has it.
public typealias CRC32C = CRC<CRC32CKernel>

/// CRC-64/NVME (polynomial `0xAD93D23594C93659`, reflected, initial value and final XOR all
/// ones), the `CRC64NVME` checksum of S3 and the NVMe command set, as
/// `awscrt.checksums.crc64nvme` returns it. The check value of `"123456789"` is
/// `0xAE8B14860A799888`. PCLMULQDQ folding where the CPU has it, slicing-by-8 tables elsewhere.
public typealias CRC64NVME = CRC<CRC64NVMEKernel>

/// The kernel of ``CRC32``.
public enum CRC32Kernel: CRCKernel {
    /// ``ChecksumAlgorithm/crc32``.
    public static var algorithm: ChecksumAlgorithm { .crc32 }
    /// `bs_crc32_update`.
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawPointer, _ count: Int, portable: Int32) -> UInt32 {
        bs_crc32_update(crc, bytes, count, portable)
    }
    /// `bs_crc32_combine`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: UInt64) -> UInt32 {
        bs_crc32_combine(crcA, crcB, lengthB)
    }
}

/// The kernel of ``CRC32C``.
public enum CRC32CKernel: CRCKernel {
    /// ``ChecksumAlgorithm/crc32c``.
    public static var algorithm: ChecksumAlgorithm { .crc32c }
    /// `bs_crc32c_update`.
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawPointer, _ count: Int, portable: Int32) -> UInt32 {
        bs_crc32c_update(crc, bytes, count, portable)
    }
    /// `bs_crc32c_combine`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: UInt64) -> UInt32 {
        bs_crc32c_combine(crcA, crcB, lengthB)
    }
}

/// The kernel of ``CRC64NVME``.
public enum CRC64NVMEKernel: CRCKernel {
    /// ``ChecksumAlgorithm/crc64nvme``.
    public static var algorithm: ChecksumAlgorithm { .crc64nvme }
    /// `bs_crc64nvme_update`.
    public static func update(_ crc: UInt64, _ bytes: UnsafeRawPointer, _ count: Int, portable: Int32) -> UInt64 {
        bs_crc64nvme_update(crc, bytes, count, portable)
    }
    /// `bs_crc64nvme_combine`.
    public static func combine(_ crcA: UInt64, _ crcB: UInt64, lengthB: UInt64) -> UInt64 {
        bs_crc64nvme_combine(crcA, crcB, lengthB)
    }
}
