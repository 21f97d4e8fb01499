import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Deterministic bytes and helpers for the checksum tests. A fixed seed keeps failures
/// reproducible; the seed appears in every assertion message that depends on it.
enum ChecksumFixtures {
    static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        TempFiles.pseudoRandomBytes(count: count, seed: seed)
    }

    /// A fresh scratch directory (``TempFiles/makeDirectory(in:prefix:)``), removed by the
    /// caller.
    static func temporaryDirectory() throws -> URL {
        URL(fileURLWithPath: try TempFiles.makeDirectory(prefix: "blobstream-checksums"), isDirectory: true)
    }

    /// Writes `count` seeded bytes to a new file in `directory` and returns its path.
    static func writeFile(in directory: URL, name: String, count: Int, seed: UInt64) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(bytes(count: count, seed: seed)).write(to: url)
        return url.path
    }

    typealias ToolResult = ToolProcess.Result

    /// Runs `executable` (looked up in PATH) with `arguments`, failing with a message naming the
    /// package to install when it is missing.
    static func run(_ executable: String, _ arguments: [String], installHint: String) async throws -> ToolResult {
        guard let path = which(executable) else {
            throw FixtureError("\(executable) is not installed; install it (\(installHint)) to run this test")
        }
        return try await runExecutable(URL(fileURLWithPath: path), arguments)
    }

    static func runExecutable(_ url: URL, _ arguments: [String]) async throws -> ToolResult {
        try await ToolProcess.execute(url, arguments)
    }

    /// The first hex word a `*sum` tool prints.
    static func firstWord(_ text: String) -> String {
        String(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).first ?? "")
    }

    private static func which(_ executable: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(executable)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Serves `bytes`, then fails for good at `failAt` with `error`: a blob whose transfer breaks.
final class FailingDataSource: BlobDataSource, @unchecked Sendable {
    let resourceName = "failing-source"
    let preferredBlockSize = 64 * 1024
    private let bytes: [UInt8]
    private let failAt: Int64
    private let error: BlobStreamError

    init(bytes: [UInt8], failAt: Int64, error: BlobStreamError) {
        self.bytes = bytes
        self.failAt = failAt
        self.error = error
    }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(.success(BlobSourceDescription(length: Int64(bytes.count))))
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard offset < failAt else { return .failed(error) }
        let count = Int(min(Int64(buffer.count), failAt - offset))
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + Int(offset), byteCount: count) }
        return .read(count)
    }

    func close() {}
}
