import CBlobStreamIntrinsics

/// CRC-64/NVME (polynomial `0xAD93D23594C93659`, reflected, initial value and final XOR all
/// ones), the `CRC64NVME` checksum of S3 and the NVMe command set. The check value of
/// `"123456789"` is `0xAE8B14860A799888`.
///
/// Uses PCLMULQDQ folding where the CPU has it, slicing-by-8 tables elsewhere.
public struct CRC64NVME: Checksum {
    /// ``ChecksumAlgorithm/crc64nvme``.
    public static let algorithm = ChecksumAlgorithm.crc64nvme

    /// The CRC of the bytes passed so far (0 for no bytes), as `awscrt.checksums.crc64nvme`
    /// returns it.
    public private(set) var value: UInt64 = 0
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
        value = bs_crc64nvme_update(value, base, bytes.count, implementation.portableFlag)
    }

    /// ``value`` as eight big-endian bytes: the bytes S3 base64-encodes in
    /// `x-amz-checksum-crc64nvme`.
    public func finalize() -> ChecksumDigest {
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
        return ChecksumDigest(validated: Self.algorithm, bytes: bytes)
    }

    /// Forgets every byte passed so far.
    public mutating func reset() {
        value = 0
    }
}
