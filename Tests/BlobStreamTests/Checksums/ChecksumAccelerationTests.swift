@testable import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// The accelerated kernels against the portable ones on random data: random lengths from 0 to
/// several MiB, starting at every alignment, fed in random pieces.
@Suite struct ChecksumAccelerationTests {
    @Test(arguments: ChecksumAlgorithm.allCases)
    func acceleratedAndPortableCodeAgree(algorithm: ChecksumAlgorithm) {
        let seed: UInt64 = 0x5eed_0000 + UInt64(algorithm.digestByteCount)
        var generator = SeededGenerator(seed: seed)
        let pool = ChecksumFixtures.bytes(count: 5 << 20 + 64, seed: seed)
        // Lengths around every threshold of the kernels (blocks, folds, 3-way strides) and
        // random ones up to 5 MiB.
        var lengths = [0, 1, 7, 8, 15, 16, 63, 64, 65, 127, 128, 255, 256, 767, 768, 769,
                       24_575, 24_576, 24_577, 1 << 20, 5 << 20]
        for _ in 0..<24 { lengths.append(Int.random(in: 0..<70_000, using: &generator)) }
        for _ in 0..<3 { lengths.append(Int.random(in: 0...(5 << 20), using: &generator)) }

        pool.withUnsafeBytes { raw in
            for length in lengths {
                let start = Int.random(in: 0..<64, using: &generator)
                let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)])
                var fast = algorithm.makeChecksum(implementation: .fastest)
                var portable = algorithm.makeChecksum(implementation: .portable)
                // The fast one in random pieces, the portable one whole.
                var offset = 0
                while offset < length {
                    let piece = min(length - offset, Int.random(in: 1...(length / 3 + 1), using: &generator))
                    fast.update(UnsafeRawBufferPointer(rebasing: slice[offset..<(offset + piece)]))
                    offset += piece
                }
                portable.update(slice)
                #expect(fast.finalize() == portable.finalize(),
                        "\(algorithm): \(length) bytes at offset \(start) (seed \(seed))")
            }
        }
    }

    /// The CRC-64/NVME folding kernel, whose constants are computed from the polynomial: every
    /// length to 600 (the 16- and 64-byte thresholds and tails) at each of 16 alignments, and
    /// random lengths to 1 MiB at random alignments, each also continued from a nonzero CRC.
    @Test func crc64nvmeFoldingAgreesWithTablesAtEveryAlignment() {
        let seed: UInt64 = 0x64_f01d
        var generator = SeededGenerator(seed: seed)
        let pool = ChecksumFixtures.bytes(count: 1 << 20 + 64, seed: seed)
        var cases: [(start: Int, length: Int)] = []
        for length in 0..<600 { for start in 0..<16 { cases.append((start, length)) } }
        for _ in 0..<100 {
            cases.append((Int.random(in: 0..<64, using: &generator), Int.random(in: 0...(1 << 20), using: &generator)))
        }
        pool.withUnsafeBytes { raw in
            for (start, length) in cases {
                let slice = UnsafeRawBufferPointer(rebasing: raw[start..<(start + length)])
                var fast = CRC64NVME(implementation: .fastest)
                var portable = CRC64NVME(implementation: .portable)
                fast.update(slice)
                portable.update(slice)
                #expect(fast.value == portable.value, "\(length) bytes at offset \(start) (seed \(seed))")
                // Continued: the kernel must take a running CRC, not only the initial one.
                fast.update(slice)
                portable.update(slice)
                #expect(fast.value == portable.value, "again: \(length) bytes at offset \(start)")
            }
        }
    }
}
