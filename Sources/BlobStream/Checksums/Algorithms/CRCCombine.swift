import CBlobStreamIntrinsics

// Combining CRCs of adjacent pieces: what lets parts hashed separately (S3 multipart parts,
// parallel readers) yield the CRC of the whole without reading it again.

extension CRC32 {
    /// The CRC-32 of A followed by B, from A's CRC `crcA`, B's CRC `crcB` and B's length in
    /// bytes `lengthB` (zlib's `crc32_combine`), in O(log `lengthB`) time and without the bytes.
    /// `lengthB` must not be negative; with `lengthB` 0 (so `crcB` 0) the result is `crcA`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int64) -> UInt32 {
        precondition(lengthB >= 0, "a length cannot be negative")
        return bs_crc32_combine(crcA, crcB, UInt64(lengthB))
    }
}

extension CRC32C {
    /// The CRC-32C of A followed by B, from A's CRC `crcA`, B's CRC `crcB` and B's length in
    /// bytes `lengthB`, in O(log `lengthB`) time and without the bytes. `lengthB` must not be
    /// negative; with `lengthB` 0 (so `crcB` 0) the result is `crcA`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int64) -> UInt32 {
        precondition(lengthB >= 0, "a length cannot be negative")
        return bs_crc32c_combine(crcA, crcB, UInt64(lengthB))
    }
}

extension CRC64NVME {
    /// The CRC-64/NVME of A followed by B, from A's CRC `crcA`, B's CRC `crcB` and B's length
    /// in bytes `lengthB`, in O(log `lengthB`) time and without the bytes. `lengthB` must not
    /// be negative; with `lengthB` 0 (so `crcB` 0) the result is `crcA`.
    public static func combine(_ crcA: UInt64, _ crcB: UInt64, lengthB: Int64) -> UInt64 {
        precondition(lengthB >= 0, "a length cannot be negative")
        return bs_crc64nvme_combine(crcA, crcB, UInt64(lengthB))
    }
}
