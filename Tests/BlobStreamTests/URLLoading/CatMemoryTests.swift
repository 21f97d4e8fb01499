import BlobStream
import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// `blobstream cat` of an `http:` URL into a reader slower than the network: the package's own
/// HTTP source pauses the download, so the process's memory does not grow with the blob (through
/// URLSession, which cannot pause, a 1 GiB blob peaked at 359 MB).
@Suite struct CatMemoryTests {
    @Test func aSlowReaderDoesNotMakeCatsMemoryGrowWithTheBlob() throws {
        try TestServers.requireNginx()
        let size = 256 << 20
        let directory = try TempFiles.makeDirectory(in: TestServers.wwwRoot, prefix: "cat-memory")
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: 78)
        let process = Process()
        process.executableURL = try ToolProcess.blobstream()
        process.arguments = ["cat", try TestServers.nginxURL(forFileAtPath: path).absoluteString]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Reads 1 MiB, then waits: about 100 MB/s, far below loopback's speed.
        var received = 0
        var peakKiB = 0
        while true {
            let chunk = output.fileHandleForReading.readData(ofLength: 1 << 20)
            if chunk.isEmpty { break }
            received += chunk.count
            peakKiB = max(peakKiB, Self.peakResidentKiB(of: process.processIdentifier) ?? 0)
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(ChildExit.waitForever(process) == .success)
        #expect(received == size)
        // The source's read-ahead and the stream's blocks, a few MiB, on top of the runtime.
        #expect(peakKiB > 0 && peakKiB < 96 << 10, "peak resident set \(peakKiB) KiB for a \(size >> 20) MiB blob")
    }

    /// `VmHWM` of `pid`: its peak resident set so far, in KiB.
    static func peakResidentKiB(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
}
