@testable import BlobStream
import Foundation
import Testing

/// Published test vectors, for both the accelerated and the portable code.
@Suite struct ChecksumVectorTests {
    static let implementations: [ChecksumImplementation] = [.fastest, .portable]

    static let nist448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
    static let nist896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"

    func digest(_ algorithm: ChecksumAlgorithm, _ implementation: ChecksumImplementation, _ text: String) -> String {
        var checksum = algorithm.makeChecksum(implementation: implementation)
        checksum.update(Array(text.utf8))
        return checksum.finalize().hex
    }

    @Test(arguments: implementations)
    func sha256MatchesFIPS180Examples(implementation: ChecksumImplementation) {
        #expect(digest(.sha256, implementation, "") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(digest(.sha256, implementation, "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digest(.sha256, implementation, Self.nist448) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(digest(.sha256, implementation, Self.nist896) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(digest(.sha256, implementation, String(repeating: "a", count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test(arguments: implementations)
    func sha1MatchesFIPS180Examples(implementation: ChecksumImplementation) {
        #expect(digest(.sha1, implementation, "") == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(digest(.sha1, implementation, "abc") == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(digest(.sha1, implementation, Self.nist448) == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(digest(.sha1, implementation, Self.nist896) == "a49b2446a02c645bf419f995b67091253a04a259")
        #expect(digest(.sha1, implementation, String(repeating: "a", count: 1_000_000)) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test(arguments: implementations)
    func md5MatchesRFC1321TestSuite(implementation: ChecksumImplementation) {
        #expect(digest(.md5, implementation, "") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(digest(.md5, implementation, "a") == "0cc175b9c0f1b6a831c399e269772661")
        #expect(digest(.md5, implementation, "abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(digest(.md5, implementation, "message digest") == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(digest(.md5, implementation, "abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b")
        #expect(digest(.md5, implementation, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == "d174ab98d277d9f5a5611c2c9f419d9f")
        #expect(digest(.md5, implementation, String(repeating: "1234567890", count: 8)) == "57edf4a22be3c955ac49da2e2107b67a")
    }

    @Test(arguments: implementations)
    func crcCheckValues(implementation: ChecksumImplementation) {
        var crc32 = CRC32(implementation: implementation)
        crc32.update(Array("123456789".utf8))
        #expect(crc32.value == 0xCBF4_3926)
        #expect(crc32.finalize().hex == "cbf43926")

        var crc32c = CRC32C(implementation: implementation)
        crc32c.update(Array("123456789".utf8))
        #expect(crc32c.value == 0xE306_9283)
        #expect(crc32c.finalize().bytes == [0xE3, 0x06, 0x92, 0x83])
        // The CRC-32C of 32 zero bytes, from RFC 3720 (iSCSI) appendix B.4.
        var zeros = CRC32C(implementation: implementation)
        zeros.update([UInt8](repeating: 0, count: 32))
        #expect(zeros.value == 0x8A91_36AA)

        // CRC-64/NVME's check value in the reveng catalogue (awscrt computes the same).
        var crc64 = CRC64NVME(implementation: implementation)
        crc64.update(Array("123456789".utf8))
        #expect(crc64.value == 0xAE8B_1486_0A79_9888)
        #expect(crc64.finalize().hex == "ae8b14860a799888")
        #expect(crc64.finalize().base64 == "rosUhgp5mIg=")
    }

    /// A message that crosses several 64-byte blocks and the 8- and 16-byte strides of the CRC
    /// kernels, split at every position into two `update` calls.
    @Test(arguments: ChecksumAlgorithm.allCases, implementations)
    func everySplitPointGivesTheSameDigest(algorithm: ChecksumAlgorithm, implementation: ChecksumImplementation) {
        let message = ChecksumFixtures.bytes(count: 300, seed: 7)
        var whole = algorithm.makeChecksum(implementation: implementation)
        whole.update(message)
        let expected = whole.finalize()
        for split in 0...message.count {
            var checksum = algorithm.makeChecksum(implementation: implementation)
            checksum.update(message[..<split])
            checksum.update(message[split...])
            #expect(checksum.finalize() == expected, "\(algorithm) split at \(split)")
        }
        // Byte by byte: every partial-block path.
        var bytewise = algorithm.makeChecksum(implementation: implementation)
        for byte in message { bytewise.update([byte]) }
        #expect(bytewise.finalize() == expected)
    }

    @Test(arguments: ChecksumAlgorithm.allCases)
    func finalizeLeavesTheStateAndResetForgetsIt(algorithm: ChecksumAlgorithm) {
        var checksum = algorithm.makeChecksum()
        checksum.update(Array("abc".utf8))
        let first = checksum.finalize()
        #expect(checksum.finalize() == first)
        checksum.update(Array("def".utf8))
        var reference = algorithm.makeChecksum()
        reference.update(Array("abcdef".utf8))
        #expect(checksum.finalize() == reference.finalize())

        checksum.reset()
        var empty = algorithm.makeChecksum()
        empty.update(UnsafeRawBufferPointer(start: nil, count: 0))
        #expect(checksum.finalize() == empty.finalize())
        #expect(checksum.finalize().bytes.count == algorithm.digestByteCount)
    }

    @Test func digestTextForms() throws {
        let digest = SHA1.digest(of: Array("abc".utf8))
        #expect(digest.hex == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(digest.base64 == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
        #expect(digest.description == digest.hex)
        #expect(ChecksumDigest(algorithm: .sha1, hex: digest.hex.uppercased()) == digest)
        #expect(ChecksumDigest(algorithm: .sha1, base64: digest.base64) == digest)
        #expect(ChecksumDigest(algorithm: .sha256, hex: digest.hex) == nil)
        #expect(ChecksumDigest(algorithm: .sha1, hex: String(repeating: "g", count: 40)) == nil)
        #expect(ChecksumDigest(algorithm: .crc32, bytes: [1, 2, 3]) == nil)
        #expect(CRC32.digest(of: Data("123456789".utf8)).base64 == "y/Q5Jg==")
    }

    @Test func algorithmsByName() {
        #expect(ChecksumAlgorithm(name: "SHA-256") == .sha256)
        #expect(ChecksumAlgorithm(name: "sha1") == .sha1)
        #expect(ChecksumAlgorithm(name: "CRC32C") == .crc32c)
        #expect(ChecksumAlgorithm(name: "CRC64NVME") == .crc64nvme)
        #expect(ChecksumAlgorithm.crc64nvme.digestByteCount == 8)
        #expect(ChecksumAlgorithm(name: "sha512") == nil)
        for algorithm in ChecksumAlgorithm.allCases {
            #expect(ChecksumAlgorithm(name: algorithm.name) == algorithm)
            #expect(algorithm.makeChecksum().algorithm == algorithm)
        }
    }
}
