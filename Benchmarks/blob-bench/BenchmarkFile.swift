import Foundation

/// The blob every scenario reads: generated once, kept between runs, read once into the page
/// cache before measuring.
enum BenchmarkFile {
    /// Creates (or reuses) a file of `size` pseudo-random bytes in `directory` and warms the page cache.
    static func prepare(size: Int, directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = "\(directory)/blob-\(size).bin"
        let existing = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
        if existing != size {
            try generate(path: path, size: size)
        }
        _ = try readAll(path)
        return path
    }

    private static func generate(path: String, size: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw BenchmarkError("cannot create \(path)") }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw BenchmarkError("cannot write \(path)") }
        defer { try? handle.close() }
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        var chunk = [UInt64](repeating: 0, count: (1 << 20) / 8)
        var written = 0
        while written < size {
            for i in chunk.indices {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                chunk[i] = state
            }
            let count = min(1 << 20, size - written)
            try chunk.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
            written += count
        }
    }

    /// Reads the file with 1 MiB `pread`s, returning the byte count.
    static func readAll(_ path: String) throws -> Int {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchmarkError("cannot open \(path)") }
        defer { close(fd) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        var total = 0
        while true {
            let n = pread(fd, buffer, 1 << 20, off_t(total))
            if n <= 0 { break }
            total += n
        }
        return total
    }
}
