@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// `combine(crcA, crcB, lengthB:)` against the one-pass CRC of A followed by B, for random
/// splits of random data, empty A and empty B included.
@Suite struct CRCCombineTests {
    /// One CRC type's one-pass value of bytes and its combine, as functions on `UInt64`.
    struct Subject: Sendable, CustomStringConvertible {
        let description: String
        let crc: @Sendable (UnsafeRawBufferPointer) -> UInt64
        let combine: @Sendable (UInt64, UInt64, Int64) -> UInt64
    }

    static let subjects = [
        Subject(description: "crc32",
                crc: { var c = CRC32(); c.update($0); return UInt64(c.value) },
                combine: { UInt64(CRC32.combine(UInt32($0), UInt32($1), lengthB: $2)) }),
        Subject(description: "crc32c",
                crc: { var c = CRC32C(); c.update($0); return UInt64(c.value) },
                combine: { UInt64(CRC32C.combine(UInt32($0), UInt32($1), lengthB: $2)) }),
        Subject(description: "crc64nvme",
                crc: { var c = CRC64NVME(); c.update($0); return c.value },
                combine: { CRC64NVME.combine($0, $1, lengthB: $2) }),
    ]

    @Test(arguments: subjects)
    func combineEqualsTheOnePassCRC(subject: Subject) {
        let seed: UInt64 = 0xc0_3b17e
        var generator = SeededGenerator(seed: seed)
        let pool = ChecksumFixtures.bytes(count: 3 << 20, seed: seed)
        pool.withUnsafeBytes { raw in
            // Small lengths (every short path) and large ones (many bits in lengthB).
            var lengths = Array(0..<40)
            for _ in 0..<60 { lengths.append(Int.random(in: 0..<5000, using: &generator)) }
            for _ in 0..<20 { lengths.append(Int.random(in: 0..<(3 << 20) - 64, using: &generator)) }
            for length in lengths {
                let start = Int.random(in: 0..<64, using: &generator)
                let whole = UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)])
                let expected = subject.crc(whole)
                // Empty A, empty B, and a random split.
                for split in [0, length, Int.random(in: 0...length, using: &generator)] {
                    let a = subject.crc(UnsafeRawBufferPointer(rebasing: whole[0..<split]))
                    let b = subject.crc(UnsafeRawBufferPointer(rebasing: whole[split...]))
                    #expect(subject.combine(a, b, Int64(length - split)) == expected,
                            "\(subject): \(length) bytes split at \(split) (seed \(seed))")
                }
            }
        }
    }

    /// Many pieces folded left, as multipart parts are: the combine of combines is the CRC of
    /// the whole, and a combine with a nonzero B really depends on A (not just B).
    @Test(arguments: subjects)
    func partsFoldIntoTheWhole(subject: Subject) {
        let pool = ChecksumFixtures.bytes(count: 1 << 20, seed: 0xfa11)
        pool.withUnsafeBytes { raw in
            var generator = SeededGenerator(seed: 0xfa11)
            var combined = subject.crc(UnsafeRawBufferPointer(start: nil, count: 0))
            var offset = 0
            while offset < raw.count {
                let length = min(raw.count - offset, Int.random(in: 0...100_000, using: &generator))
                let part = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
                combined = subject.combine(combined, subject.crc(part), Int64(length))
                offset += length
            }
            #expect(combined == subject.crc(raw), "\(subject)")
            let b = UnsafeRawBufferPointer(rebasing: raw[1000..<2000])
            #expect(subject.combine(1, subject.crc(b), 1000) != subject.combine(2, subject.crc(b), 1000))
        }
    }
}
