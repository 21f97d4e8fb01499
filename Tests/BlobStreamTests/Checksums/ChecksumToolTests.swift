import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Digests of real files against the standard tools: coreutils' `sha256sum`, `sha1sum` and
/// `md5sum`, and Python's `zlib.crc32`.
@Suite struct ChecksumToolTests {
    static let sizes = [0, 1, 55, 64, 1_048_593, 9 << 20 + 3]

    static let tools: [(ChecksumAlgorithm, [String])] = [
        (.sha256, ["sha256sum"]),
        (.sha1, ["sha1sum"]),
        (.md5, ["md5sum"]),
        (.crc32, ["python3", "-c", """
            import sys, zlib
            crc = 0
            with open(sys.argv[1], 'rb') as f:
                for chunk in iter(lambda: f.read(1 << 20), b''):
                    crc = zlib.crc32(chunk, crc)
            print('%08x' % crc)
            """]),
    ]

    @Test(arguments: tools.map(\.0))
    func fileDigestsMatchTheStandardTool(algorithm: ChecksumAlgorithm) async throws {
        let directory = try ChecksumFixtures.temporaryDirectory()
        defer { TempFiles.remove(directory.path) }
        let command = Self.tools.first { $0.0 == algorithm }!.1
        for (index, size) in Self.sizes.enumerated() {
            let path = try ChecksumFixtures.writeFile(in: directory, name: "file-\(size)", count: size, seed: UInt64(index + 100))
            // The synchronous digest: in an async function the async overload would be chosen.
            let ours = try Self.synchronously { try ChecksumCalculator(algorithm: algorithm).digest(of: BlobInputStream(fileAtPath: path)) }
            let tool = try await ChecksumFixtures.run(command[0], Array(command.dropFirst()) + [path],
                                                installHint: "apt-get install coreutils python3")
            #expect(tool.status == 0, "\(command[0]) failed: \(tool.standardError)")
            #expect(ours.hex == ChecksumFixtures.firstWord(tool.standardOutput), "\(algorithm) of \(size) bytes")
        }
    }

    /// Runs `body` in a synchronous context, so that it calls the synchronous overloads.
    private static func synchronously<T>(_ body: () throws -> T) rethrows -> T {
        try body()
    }
}
