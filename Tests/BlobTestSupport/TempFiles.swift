import Foundation
import Glibc
import SystemCalls

/// Scratch directories, deterministic pseudo-random content and SHA-256 digests for tests.
///
/// The content is a pure function of `(seed, offset)`, so a test can write a large file and
/// later compute the expected bytes of any range of it without keeping the file in memory.
public enum TempFiles {
    /// Creates a new, uniquely named directory in this process's ``ScratchSpace`` inside
    /// `parent` (the system temporary directory by default; pass ``TestServers/wwwRoot`` to
    /// have nginx serve its files) and returns its path. Remove it with
    /// `defer { TempFiles.remove(directory) }` right after this call.
    public static func makeDirectory(
        in parent: String = NSTemporaryDirectory(), prefix: String = "blobstream-test"
    ) throws -> String {
        let root = try ScratchSpace.directory(in: parent)
        var template = (root + "/" + prefix + ".XXXXXX").utf8CString
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw TestSupportError("cannot create a directory in \(root): \(String(cString: strerror(errno)))")
        }
        let path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
        // mkdtemp makes it 0700; nginx's workers may run as another user.
        chmod(path, 0o755)
        return path
    }

    /// Writes `size` pseudo-random bytes for `seed` to a new, uniquely named file
    /// (`<prefix>-<UUID>.bin`) in this process's ``ScratchSpace`` inside `parent`, and returns
    /// its path; if writing fails, the file is removed before the error is thrown. Remove it
    /// with `defer { TempFiles.remove(path) }` right after this call.
    public static func makeRandomFile(
        in parent: String = NSTemporaryDirectory(), prefix: String, size: Int, seed: UInt64 = 0
    ) throws -> String {
        let path = try ScratchSpace.directory(in: parent) + "/" + prefix + "-" + UUID().uuidString + ".bin"
        try removing(path, ifThrows: { try writeRandomFile(atPath: path, size: size, seed: seed) })
        return path
    }

    /// Runs `body`, which fills `path` (scratch space just made); if it throws, `path` is
    /// removed before the error propagates. For helpers that make a directory, fill it and
    /// return it: the caller's `defer` exists only once they returned.
    public static func removing<T>(_ path: String, ifThrows body: () throws -> T) rethrows -> T {
        do {
            return try body()
        } catch {
            remove(path)
            throw error
        }
    }

    /// Writes `size` pseudo-random bytes for `seed` to a new file at `path` (replacing any file
    /// there), generating and writing 1 MiB at a time.
    public static func writeRandomFile(atPath path: String, size: Int, seed: UInt64 = 0) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw TestSupportError("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        let chunk = 1 << 20
        var offset = 0
        while offset < size {
            let count = min(chunk, size - offset)
            try handle.write(contentsOf: pseudoRandomBytes(count: count, seed: seed, from: offset))
            offset += count
        }
    }

    /// The `count` bytes at `offset` of the pseudo-random stream for `seed`: exactly what
    /// ``writeRandomFile(atPath:size:seed:)`` writes at that offset.
    public static func pseudoRandomBytes(count: Int, seed: UInt64 = 0, from offset: Int = 0) -> [UInt8] {
        precondition(count >= 0 && offset >= 0, "count and offset must not be negative")
        // Byte i of the stream is byte (i % 8) of word(i / 8), little-endian; each word is the
        // SplitMix64 hash of its index, so any range can be produced on its own.
        let firstWord = offset / 8
        let lastWord = (offset + count + 7) / 8
        var words = [UInt64](repeating: 0, count: lastWord - firstWord)
        words.withUnsafeMutableBufferPointer { buffer in
            // Debug builds do not inline, so the loop is written out flat to stay fast.
            var index = UInt64(firstWord)
            for slot in buffer.indices {
                var z = seed &+ index &* 0x9E37_79B9_7F4A_7C15 &+ 0x9E37_79B9_7F4A_7C15
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                buffer[slot] = (z ^ (z >> 31)).littleEndian
                index &+= 1
            }
        }
        let skip = offset - firstWord * 8
        return words.withUnsafeBytes { Array($0[skip..<skip + count]) }
    }

    /// The lowercase hex SHA-256 of the file at `path`, computed by `/usr/bin/sha256sum`
    /// (independent of the code under test).
    public static func sha256(ofFileAtPath path: String) throws -> String {
        try sha256sum(arguments: [path], input: nil)
    }

    /// The lowercase hex SHA-256 of `bytes`, computed by `/usr/bin/sha256sum`.
    public static func sha256<Bytes: Sequence>(of bytes: Bytes) throws -> String where Bytes.Element == UInt8 {
        try sha256sum(arguments: ["-"], input: Data(bytes))
    }

    /// Removes `path` and everything under it; a missing path is not an error.
    public static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func sha256sum(arguments: [String], input: Data?) throws -> String {
        let result = try ToolProcess.run(URL(fileURLWithPath: "/usr/bin/sha256sum"), arguments, standardInput: input)
        guard result.status == 0, result.signal == nil,
              let digest = result.standardOutput.split(separator: " ").first, digest.count == 64 else {
            let reason = result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            throw TestSupportError("sha256sum \(arguments.joined(separator: " ")) failed: \(reason)")
        }
        return String(digest)
    }
}
