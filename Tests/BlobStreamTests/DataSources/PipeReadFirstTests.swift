@testable import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// A read of a non-blocking input is tried at once: `poll` only answers whether a read would
/// wait, which a non-blocking `read` answers by itself (EAGAIN). Only an inherited descriptor
/// that blocks is polled first, since a read of it could wait.
@Suite struct PipeReadFirstTests {
    private func open(_ source: PipeDataSource) throws {
        let result = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open { result.value = $0 }
        _ = try result.value!.get()
    }

    private func read(_ source: PipeDataSource, at offset: Int64) -> BlobSourceReadResult {
        var buffer = [UInt8](repeating: 0, count: 64)
        return buffer.withUnsafeMutableBytes { source.read(into: $0, at: offset, whenReadable: {}) }
    }

    @Test func aFIFOItOpenedIsReadWithoutPolling() throws {
        let directory = try TempFiles.makeDirectory(prefix: "pipe-read-first")
        defer { TempFiles.remove(directory) }
        let path = directory + "/fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let source = PipeDataSource(path: path)
        defer { source.close() }
        try open(source)
        let writer = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        #expect(writer >= 0)
        _ = Array("hello".utf8).withUnsafeBytes { Glibc.write(writer, $0.baseAddress, $0.count) }
        #expect(read(source, at: 0) == .read(5))
        #expect(read(source, at: 5) == .wouldBlock)
        #expect(source.readinessPolls == 0)
        // Only a read of 0 asks poll: a FIFO without a writer yet reads as an end too.
        close(writer)
        #expect(read(source, at: 5) == .end)
        #expect(source.readinessPolls == 1)
    }

    @Test func anInheritedBlockingPipeIsPolledFirst() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let source = PipeDataSource(fileDescriptor: ends[0], name: "blocking")
        defer { source.close() }
        try open(source)
        // A blocking read of an empty pipe would hang here: the poll must come first.
        #expect(read(source, at: 0) == .wouldBlock)
        close(ends[1])
        #expect(read(source, at: 0) == .end)
        #expect(source.readinessPolls == 2)
    }
}
