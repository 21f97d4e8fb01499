import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// `blobstream checksum` of a file rewritten in place while the process reads it must fail,
/// never print the digest of a mix of both versions.
///
/// The race is made deterministic with job control: the test stops the process (SIGSTOP) once
/// `/proc/PID/io` shows it has read part of the file but not all of it, rewrites the file while
/// it is stopped, and lets it go on (SIGCONT). An attempt that stops the process too late is
/// discarded and repeated; nothing depends on timing.
@Suite struct ChecksumRewriteCommandTests {
    static let size = 256 << 20
    static let chunk = 1 << 20

    /// Writes `size` bytes in which every MiB is filled with one byte value derived from `seed`.
    static func writePatternFile(_ path: String, seed: UInt8) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestSupportError("cannot open \(path): errno \(errno)") }
        defer { close(fd) }
        for index in 0..<(size / chunk) {
            let bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: index) &+ seed, count: chunk)
            let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, chunk, off_t(index * chunk)) }
            guard written == chunk else { throw TestSupportError("cannot write \(path): errno \(errno)") }
        }
    }

    /// Bytes the process has read so far (every read and pread), from `/proc/PID/io`.
    static func bytesRead(by pid: Int32) -> Int? {
        let fd = open("/proc/\(pid)/io", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("rchar:") }) else { return nil }
        return Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces))
    }

    /// Whether the process is stopped, from the state field of `/proc/PID/stat`.
    static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)] == "T"
    }

    struct Outcome {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs one checksum and rewrites the file while the process is stopped mid-read; `nil` when
    /// the process could not be caught between its first and last read of the file.
    static func checksumRewrittenMidRead(_ path: String) async throws -> Outcome? {
        let child = try ToolProcess.start(try ToolProcess.blobstream(), ["checksum", path])
        let pid = child.processIdentifier
        var caught = false
        while child.isRunning {
            // Poll, but leave the CPU to the child: on two cores a spin would slow it down.
            guard let read = bytesRead(by: pid), read >= 8 << 20 else {
                usleep(200)
                continue
            }
            kill(pid, SIGSTOP)
            while child.isRunning && !isStopped(pid) { usleep(100) }
            if child.isRunning, let read = bytesRead(by: pid), read < size - chunk {
                try writePatternFile(path, seed: 101)
                try FileMutation.moveModificationTimeForward(path)
                caught = true
            }
            kill(pid, SIGCONT)
            break
        }
        let result = await child.finished()
        guard caught else { return nil }
        return Outcome(status: result.status, output: result.standardOutput, errors: result.standardError)
    }

    @Test func aFileRewrittenWhileTheProcessReadsItFails() async throws {
        let directory = try TempFiles.makeDirectory(prefix: "cli-rewrite")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob"
        for _ in 0..<5 {
            try Self.writePatternFile(path, seed: 0)
            guard let outcome = try await Self.checksumRewrittenMidRead(path) else { continue }
            #expect(outcome.status == 1, "stdout: \(outcome.output)")
            #expect(outcome.output.isEmpty)
            #expect(outcome.errors.contains(path) && outcome.errors.contains("changed while being read"), "\(outcome.errors)")
            return
        }
        Issue.record("the checksum process was never caught in the middle of its read")
    }
}
