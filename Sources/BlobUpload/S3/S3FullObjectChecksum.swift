import BlobStream
import Foundation

/// The whole object's CRC of a full-object multipart upload, from its parts' CRCs and sizes:
/// no byte is read again, and parts kept from an earlier run count like those just sent.
enum S3FullObjectChecksum {
    /// Base64 of the big-endian CRC of the parts' bytes in order (`parts` sorted by number, each
    /// with its checksum of `algorithm`).
    /// - Throws: ``S3Error/protocolViolation(bucket:key:operation:reason:)`` when a part has no
    ///   checksum of `algorithm` (a resumed upload's listing without one).
    static func combine(_ parts: [S3CompletedPart], algorithm: S3ChecksumAlgorithm, bucket: String, key: String) throws(S3Error) -> String {
        var whole: UInt64 = 0
        for part in parts {
            guard let text = part.checksum, let digest = ChecksumDigest(algorithm: algorithm.algorithm, base64: text) else {
                throw .protocolViolation(bucket: bucket, key: key, operation: "CompleteMultipartUpload",
                                         reason: "part \(part.number) has no \(algorithm) checksum to combine")
            }
            let crc = digest.bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let length = Int64(part.size)
            switch algorithm {
            case .crc32: whole = UInt64(CRC32.combine(UInt32(whole), UInt32(crc), lengthB: length))
            case .crc32c: whole = UInt64(CRC32C.combine(UInt32(whole), UInt32(crc), lengthB: length))
            case .crc64nvme: whole = CRC64NVME.combine(whole, crc, lengthB: length)
            case .sha1, .sha256: preconditionFailure("\(algorithm) does not combine; validated before the upload")
            }
        }
        let count = algorithm.algorithm.digestByteCount
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: whole >> (8 * (count - 1 - $0))) }
        return Data(bytes).base64EncodedString()
    }
}
