import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// ``PipeDataSource`` on a real pipe: reads that never wait, a callback when bytes arrive, the
/// end when the writer closes, and typed errors for what a pipe cannot do (seek, reopen).
@Suite struct PipeDataSourceTests {
    /// A pipe whose read end becomes the source's inherited descriptor.
    final class TestPipe: @unchecked Sendable {
        let readEnd: Int32
        private(set) var writeEnd: Int32

        init() throws {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw TestSupportError("pipe: errno \(errno)") }
            (readEnd, writeEnd) = (ends[0], ends[1])
        }

        func write(_ text: String) {
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
        }

        func closeWriter() {
            close(writeEnd)
            writeEnd = -1
        }

        deinit {
            close(readEnd)
            if writeEnd >= 0 { close(writeEnd) }
        }
    }

    func open(_ source: PipeDataSource) -> Result<BlobSourceDescription, BlobStreamError> {
        let result = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open { result.value = $0 }
        return result.value!
    }

    func read(_ source: PipeDataSource, at offset: Int64, whenReadable: @escaping @Sendable () -> Void = {}) -> (BlobSourceReadResult, String) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let result = buffer.withUnsafeMutableBytes { source.read(into: $0, at: offset, whenReadable: whenReadable) }
        if case .read(let count) = result { return (result, String(decoding: buffer.prefix(count), as: UTF8.self)) }
        return (result, "")
    }

    @Test func readsWithoutWaitingAndCallsBackWhenBytesArrive() throws {
        let pipe = try TestPipe()
        let source = PipeDataSource(fileDescriptor: pipe.readEnd, name: "test-pipe")
        defer { source.close() }
        #expect(try open(source).get() == BlobSourceDescription(length: nil))

        let readable = DispatchSemaphore(value: 0)
        #expect(read(source, at: 0) { readable.signal() }.0 == .wouldBlock)
        pipe.write("hello")
        #expect(readable.wait(timeout: .now() + 30) == .success, "whenReadable was not called")
        #expect(read(source, at: 0).1 == "hello")

        pipe.write(" world")
        #expect(read(source, at: 5).1 == " world")
        pipe.closeWriter()
        // A child that another test spawns at this moment holds the write end until it execs:
        // the end may come a little later, and then with a callback.
        let ended = DispatchSemaphore(value: 0)
        if read(source, at: 11, whenReadable: { ended.signal() }).0 == .wouldBlock {
            #expect(ended.wait(timeout: .now() + 30) == .success, "whenReadable was not called for the end")
        }
        #expect(read(source, at: 11).0 == .end)
        #expect(read(source, at: 11).0 == .end)
    }

    @Test func anOpenThatFailedCanBeTriedAgainAndSaysWhy() throws {
        let source = PipeDataSource(path: "/nonexistent/blobstream-fifo")
        for _ in 0..<2 {
            guard case .failure(let error) = open(source) else {
                Issue.record("a missing FIFO opened")
                return
            }
            #expect(error.description.contains("/nonexistent/blobstream-fifo"), "\(error)")
            #expect(!error.description.contains("only once"), "\(error)")
        }
    }

    @Test func onlyTheNextOffsetCanBeReadAndOnlyOnce() throws {
        let pipe = try TestPipe()
        let source = PipeDataSource(fileDescriptor: pipe.readEnd, name: "test-pipe")
        _ = open(source)
        pipe.write("0123456789")
        guard case .failed(.sourceFailed(let name, let reason)) = read(source, at: 3).0 else {
            Issue.record("a read at offset 3 of a fresh pipe did not fail")
            return
        }
        #expect(name == "test-pipe")
        #expect(reason.contains("offset 3"))
        #expect(read(source, at: 0).1 == "0123456789")
        #expect(read(source, at: 0).0 != .read(10), "bytes already read cannot be read again")
        source.close()
        guard case .failure(.sourceFailed(_, let reopen)) = open(source) else {
            Issue.record("a pipe reopened without an error")
            return
        }
        #expect(reopen.contains("only once"))
    }

    @Test func closeDropsThePendingCallbackAndLeavesAnInheritedDescriptorOpen() throws {
        let pipe = try TestPipe()
        let source = PipeDataSource(fileDescriptor: pipe.readEnd, name: "test-pipe")
        _ = open(source)
        let called = Locked(false)
        #expect(read(source, at: 0) { called.value = true }.0 == .wouldBlock)
        source.close()
        pipe.write("late")
        Thread.sleep(forTimeInterval: 0.2)
        #expect(!called.value, "whenReadable was called after close")
        #expect(fcntl(pipe.readEnd, F_GETFD) >= 0, "the inherited descriptor was closed")
    }

    @Test func aFIFOWithoutAWriterYetHasNoBytesRatherThanAnEnd() throws {
        let directory = try TempFiles.makeDirectory(prefix: "pipe-source")
        defer { TempFiles.remove(directory) }
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let source = PipeDataSource(path: fifo)
        defer { source.close() }
        _ = try open(source).get()
        let readable = DispatchSemaphore(value: 0)
        #expect(read(source, at: 0) { readable.signal() }.0 == .wouldBlock)
        let writer = FileHandle(forWritingAtPath: fifo)
        try writer?.write(contentsOf: Data("fifo".utf8))
        try writer?.close()
        #expect(readable.wait(timeout: .now() + 30) == .success)
        #expect(read(source, at: 0).1 == "fifo")
        #expect(read(source, at: 4).0 == .end)
    }
}
