import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// CRC-64/NVME against an independent implementation: `awscrt.checksums.crc64nvme`, the AWS
/// SDKs' own (installed by `Scripts/test-servers.sh up`), on large unaligned slices fed in two
/// pieces, and on what `blobstream checksum --algorithm crc64nvme` prints for a file.
@Suite struct CRC64NVMEReferenceTests {
    /// awscrt's CRC of slices of the file at argv[1]; argv[2] is `start,length,split;…`. Each
    /// slice is also fed in two pieces (through `previous_crc64nvme`), like ours.
    static let script = """
        import sys
        from awscrt.checksums import crc64nvme
        data = memoryview(open(sys.argv[1], 'rb').read())
        for spec in sys.argv[2].split(';'):
            start, length, split = map(int, spec.split(','))
            crc = crc64nvme(data[start + split:start + length], crc64nvme(data[start:start + split]))
            print('%016x' % crc)
        """

    static func awscrt(_ path: String, _ specs: [(start: Int, length: Int, split: Int)]) async throws -> [String] {
        let argument = specs.map { "\($0.start),\($0.length),\($0.split)" }.joined(separator: ";")
        let result = try await ChecksumFixtures.run("python3", ["-c", script, path, argument],
                                                    installHint: "apt-get install python3")
        guard result.status == 0 else {
            throw FixtureError("awscrt failed: \(result.standardError) — \(TestServers.instructions)")
        }
        return result.standardOutput.split(separator: "\n").map(String.init)
    }

    @Test func fortyRandomSlicesUpTo64MiBMatchAwscrt() async throws {
        let seed: UInt64 = 0x64_4e56_4d45
        var generator = SeededGenerator(seed: seed)
        let maximum = 64 << 20 + 7
        // One pool, written once; every slice starts at a random offset below 64 (unaligned).
        let pool = ChecksumFixtures.bytes(count: maximum + 64, seed: seed)
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let path = directory.appendingPathComponent("pool").path
        try Data(pool).write(to: URL(fileURLWithPath: path))

        // The extremes, then random lengths; random split points, including the ends.
        var lengths = [0, maximum]
        while lengths.count < 40 { lengths.append(Int.random(in: 0...maximum, using: &generator)) }
        let specs = lengths.map { length in
            (start: Int.random(in: 0..<64, using: &generator), length: length,
             split: Int.random(in: 0...length, using: &generator))
        }
        let expected = try await Self.awscrt(path, specs)
        try #require(expected.count == specs.count, "awscrt printed \(expected.count) lines")

        pool.withUnsafeBytes { raw in
            for (spec, reference) in zip(specs, expected) {
                var crc = CRC64NVME()
                crc.update(UnsafeRawBufferPointer(rebasing: raw[spec.start..<(spec.start + spec.split)]))
                crc.update(UnsafeRawBufferPointer(rebasing: raw[(spec.start + spec.split)..<(spec.start + spec.length)]))
                #expect(crc.finalize().hex == reference,
                        "\(spec.length) bytes at \(spec.start), split at \(spec.split) (seed \(seed))")
            }
        }
    }

    @Test func checksumCommandPrintsWhatAwscrtComputes() async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let size = 3 << 20 + 5
        let path = try ChecksumFixtures.writeFile(in: directory, name: "blob", count: size, seed: 64)
        let reference = try await Self.awscrt(path, [(start: 0, length: size, split: size / 3)])
        let ours = try await ChecksumFixtures.runExecutable(try ToolProcess.blobstream(),
                                                            ["checksum", "--algorithm", "crc64nvme", path])
        #expect(ours.status == 0, "\(ours.standardError)")
        #expect(ours.standardOutput == "\(reference.first ?? "")  \(path)\n")
        // The hex is of the big-endian bytes, so base64 of the digest is S3's header value.
        let digest = try #require(ChecksumDigest(algorithm: .crc64nvme, hex: reference.first ?? ""))
        let direct = try await ChecksumCalculator(algorithm: .crc64nvme).digest(of: BlobInputStream(fileAtPath: path))
        #expect(direct.base64 == digest.base64)
        // --base64 prints it the way S3 does.
        let asS3 = try await ChecksumFixtures.runExecutable(try ToolProcess.blobstream(),
                                                            ["checksum", "--algorithm", "crc64nvme", "--base64", path])
        #expect(asS3.standardOutput == "\(digest.base64)  \(path)\n")
    }
}
