import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// Streams made one after another over one data source, in both modes: a stream closed while
/// its read runs closes the source when that read returns, and that late close is its own — it
/// never reaches the next stream, whose open waits for it. The source sees only the calls its
/// contract allows (``ContractCheckingSource``).
@Suite struct SharedSourceStreamTests {
    static let size = 4 * 64 * 1024

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aStreamClosedWhileItReadsLeavesTheNextStreamAlone(mode: BlobInputStream.Mode) throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: 23)
        let expected = TempFiles.pseudoRandomBytes(count: Self.size, seed: 23)
        let source = ContractCheckingSource(FileDataSource(path: path), readDelay: 0.005)
        var failures: [String] = []
        for pass in 0..<15 {
            let first = BlobInputStream(dataSource: source, mode: mode)
            first.open()
            // A synchronous stream reads on a thread of its own; an asynchronous one started
            // reading ahead when it opened.
            let reading = mode == .synchronous ? BackgroundRead(first, count: Self.size) : nil
            Thread.sleep(forTimeInterval: 0.002)
            first.close()
            let second = StreamHarness.drain(BlobInputStream(dataSource: source, mode: mode), timeout: 10)
            if let error = second.error {
                failures.append("pass \(pass): \(error)")
            } else if second.bytes != expected {
                failures.append("pass \(pass): \(second.bytes.count) bytes, not the blob")
            }
            if let reading, reading.wait(timeout: 10) == nil { failures.append("pass \(pass): the closed stream's read never returned") }
        }
        #expect(failures.isEmpty, "\(failures.count) of 15 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
        #expect(eventually(timeout: 5) { !source.isOpenNow }, "the source was left open")
    }

    /// A stream closed (asynchronous mode) or timed out (synchronous mode) while its open is
    /// pending, and kept: the open's completion comes later, and the close it calls for does
    /// not reach the next stream, which opened the source meanwhile.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func aLateOpenCompletionLeavesTheNextStreamAlone(mode: BlobInputStream.Mode) throws {
        let directory = try TempFiles.makeDirectory()
        defer { TempFiles.remove(directory) }
        let path = directory + "/blob.bin"
        try TempFiles.writeRandomFile(atPath: path, size: Self.size, seed: 25)
        let expected = TempFiles.pseudoRandomBytes(count: Self.size, seed: 25)
        let source = ContractCheckingSource(FileDataSource(path: path), openDelay: 0.02)
        var failures: [String] = []
        var abandoned: [BlobInputStream] = []
        for pass in 0..<10 {
            let first = BlobInputStream(dataSource: source, mode: mode)
            abandoned.append(first)
            first.openTimeout = 0.005
            first.open()
            // A loaded machine may let the open complete within its time-out: then the first
            // stream is open and live, and two live streams over one source is not the case here.
            if mode == .asynchronous || first.streamStatus != .error { first.close() }
            let second = BlobInputStream(dataSource: source, mode: mode)
            let drained = StreamHarness.drain(second, timeout: 10)
            if let error = drained.error {
                failures.append("pass \(pass): \(error)")
            } else if drained.bytes != expected {
                failures.append("pass \(pass): \(drained.bytes.count) bytes, not the blob")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 10 passes failed: \(failures.prefix(3))")
        #expect(source.violations.isEmpty, "\(source.violations.prefix(5))")
        abandoned.forEach { $0.close() }
    }

    /// A stream freed without `close()` while another stream uses the source does not close it.
    @Test func aStreamFreedAfterTheNextOneOpenedDoesNotCloseIt() throws {
        let bytes = TempFiles.pseudoRandomBytes(count: Self.size, seed: 24)
        let source = ContractCheckingSource(MemoryDataSource(data: Data(bytes)))
        var first: BlobInputStream? = BlobInputStream(dataSource: source)
        first?.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(first?.read(&buffer, maxLength: buffer.count) == 1000)
        let second = BlobInputStream(dataSource: source)
        second.open()
        first = nil
        #expect(source.isOpenNow, "the first stream's release closed the second stream's source")
        let rest = StreamHarness.drain(second)
        #expect(rest.error == nil && rest.bytes == bytes)
    }
}
