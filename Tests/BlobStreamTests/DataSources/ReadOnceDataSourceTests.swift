import BlobStream
import Foundation
import Testing

/// The one read-once rule, on a base that would happily serve any offset and any number of
/// opens: the decorator is what refuses.
@Suite struct ReadOnceDataSourceTests {
    private final class FlakyOpen: BlobDataSource, @unchecked Sendable {
        let resourceName = "flaky"
        var failuresLeft: Int
        let memory = MemoryDataSource(data: Data([1, 2, 3, 4, 5]), name: "flaky")
        init(failures: Int) { failuresLeft = failures }

        func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
            if failuresLeft > 0 {
                failuresLeft -= 1
                completion(.failure(.notFound(resource: resourceName)))
            } else {
                memory.open(completion: completion)
            }
        }

        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void) -> BlobSourceReadResult {
            memory.read(into: buffer, at: offset, whenReadable: whenReadable)
        }

        func close() { memory.close() }
    }

    private func open(_ source: any BlobDataSource) -> Result<BlobSourceDescription, BlobStreamError> {
        let box = Handoff<Result<BlobSourceDescription, BlobStreamError>>()
        source.open { box.set($0) }
        return box.wait()
    }

    private func read(_ source: any BlobDataSource, at offset: Int64, count: Int) -> (BlobSourceReadResult, [UInt8]) {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { source.read(into: $0, at: offset) {} }
        if case .read(let n) = result { bytes.removeSubrange(n...) }
        return (result, bytes)
    }

    @Test func readsInOrderOnceAndNeverAgain() {
        let source = ReadOnceDataSource(MemoryDataSource(data: Data([1, 2, 3, 4, 5])), kind: "a test stream")
        #expect((try? open(source).get()) != nil)
        #expect(read(source, at: 0, count: 2).1 == [1, 2])
        #expect(source.reached == 2)
        guard case .failed(.sourceFailed(_, let reason)) = read(source, at: 0, count: 2).0 else {
            Issue.record("a read back at 0 was not refused")
            return
        }
        #expect(reason == "a test stream is read once and in order: offset 0 was asked, but the next byte is at offset 2")
        guard case .failed(.sourceFailed) = read(source, at: 4, count: 1).0 else {
            Issue.record("a read ahead at 4 was not refused")
            return
        }
        #expect(read(source, at: 2, count: 10).1 == [3, 4, 5])
        guard case .failure(.sourceFailed(_, let again)) = open(source) else {
            Issue.record("a second open was not refused")
            return
        }
        #expect(again == "a test stream can be read only once; it cannot be opened again")
    }

    @Test func anOpenThatFailedMayBeTriedAgain() {
        let base = FlakyOpen(failures: 1)
        let source = ReadOnceDataSource(base, kind: "a test stream")
        #expect(open(source) == .failure(.notFound(resource: "flaky")), "the base's own error, not the read-once rule's")
        #expect((try? open(source).get()) != nil)
        #expect(read(source, at: 0, count: 5).1 == [1, 2, 3, 4, 5])
    }
}
