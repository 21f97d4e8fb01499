@testable import BlobStream
import BlobTestSupport
import Dispatch
import Foundation
import Testing

/// ``AssetDataSource`` as a decorator of the source each open resolves: what reaches the
/// resolved source, when it is closed, and how its answers and errors come back.
@Suite struct AssetDataSourceResolutionTests {
    static let bytes = assetTestBytes(count: 5000, seed: 5)

    @Test func aNewerOpenClosesTheSourceResolvedForTheOlderOneUnread() throws {
        let store = MemoryAssetStore(answering: .manually)
        store.put("photo", Self.bytes)
        let source = AssetDataSource(store: store, identifier: "photo")
        let completions = CallCounter()
        source.open { _ in completions.increment() }
        let second = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        source.open { result in second.value = result }
        #expect(store.answerPending() == 2)
        #expect(completions.count == 0)
        #expect(try second.value?.get().length == Int64(Self.bytes.count))
        let outcome = readToEnd(source, description: BlobSourceDescription(length: 5000, version: "photo#1"), bufferSize: 4096)
        #expect(outcome.bytes == Self.bytes)
        let (older, newer) = (store.handedOut[0], store.handedOut[1])
        #expect((older.opens.count, older.reads.count, older.closes.count) == (0, 0, 1))
        #expect(newer.opens.count == 1 && newer.reads.count == 2 && newer.closes.count == 0)
        source.close()
        source.close()
        #expect(newer.closes.count == 1, "closed once, however often the asset source is")
    }

    /// A close while the resolved source's open call runs (on the store's thread) must wait for
    /// that call to end: closing it then would be two calls at once on one source.
    @Test func aCloseDuringTheResolvedSourcesOpenClosesItOnceTheOpenReturns() throws {
        let probe = ProbeDataSource(bytes: Self.bytes, name: "gated-asset")
        let gate = GatedOpenSource(probe)
        let checked = ContractCheckingSource(gate)
        let source = AssetDataSource(store: SourceStore { checked }, identifier: "photo")
        let completions = CallCounter()
        let opening = DispatchGroup()
        DispatchQueue.global().async(group: opening) { source.open { _ in completions.increment() } }
        try #require(gate.entered.wait(timeout: .now() + 10) == .success)
        source.close()
        #expect(!probe.calls.contains(.close), "closed while its open ran")
        gate.proceed.signal()
        try #require(opening.wait(timeout: .now() + 10) == .success)
        #expect(probe.calls == [.open, .close])
        #expect(checked.violations.isEmpty, "\(checked.violations)")
        #expect(completions.count == 0)
    }

    @Test(arguments: [nil, -1] as [Int64?])
    func aResolvedSourceWithoutANonNegativeLengthFailsTheOpen(length: Int64?) throws {
        let probe = ProbeDataSource(bytes: Self.bytes, name: "lengthless")
        let store = SourceStore { DescribedAs(probe, .success(BlobSourceDescription(length: length, version: "v1"))) }
        let source = AssetDataSource(store: store, identifier: "photo")
        guard case .failure(.sourceFailed(let resource, let reason))? = openAndWait(source) else {
            Issue.record("expected sourceFailed")
            return
        }
        #expect(resource == "asset://?id=photo")
        #expect(reason.contains(length == nil ? "no length" : "negative length (-1)"), "\(reason)")
        #expect(probe.calls == [.open, .close])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .failed(.notOpen))
        #expect(probe.reads.isEmpty)
    }

    /// Every open resolves again and opens the new source where the stream will read: the
    /// offset it was positioned at before its open, and the one it reached when it reopens.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func eachResolvedSourceIsOpenedAtTheStreamsOffset(mode: BlobInputStream.Mode) throws {
        let bytes = assetTestBytes(count: 200_000, seed: 6)
        let probes = Locked<[ProbeDataSource]>([])
        let resolving = SourceStore {
            let probe = ProbeDataSource(bytes: bytes, name: "positioned")
            probes.mutate { $0.append(probe) }
            return probe
        }
        // Stops a read short at 100 000 and goes stale there: the stream reopens at that offset.
        let store = InvalidatingAssetStore(base: resolving, invalidatingAt: [100_000])
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo", blockSize: 1000), mode: mode)
        try stream.seek(to: 200)
        let drained = StreamHarness.drain(stream, chunk: 1000, timeout: 30)
        stream.close()
        #expect(drained.error == nil)
        #expect(drained.bytes == Array(bytes[200...]))
        #expect(store.remainingTriggers == 0)
        #expect(probes.value.map(\.openOffsets) == [[200], [100_000]])
        #expect(probes.value.map { $0.calls.last } == [.close, .close])
    }

    /// Errors the resolved source reports under its own name name the asset source's name (the
    /// URL as given); a name it chose for something else, a file path, stays.
    @Test func errorsOfTheResolvedSourceNameTheAssetAsGiven() throws {
        let probe = ProbeDataSource(bytes: Self.bytes, name: "inner-name")
        let failure = Locked<BlobStreamError>(.sourceFailed(resource: "inner-name", reason: "handle revoked"))
        probe.onRead { _, _ in .answer(.failed(failure.value)) }
        let source = AssetDataSource(store: SourceStore { probe }, identifier: "photo", resourceName: "gallery://?id=photo")
        _ = try #require(openAndWait(source)).get()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .failed(.sourceFailed(resource: "gallery://?id=photo", reason: "handle revoked")))
        let system = BlobStreamError.system(resource: "/library/photo", operation: "pread", offset: 0, errno: EIO)
        failure.value = system
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .failed(system))
        probe.answerConfirm(with: .lengthExceeded(resource: "inner-name", length: 5000))
        #expect(source.confirmUnchanged(at: 5000) == .lengthExceeded(resource: "gallery://?id=photo", length: 5000))

        let refusing = ProbeDataSource(bytes: [], name: "inner-name")
        let failing = AssetDataSource(
            store: SourceStore { DescribedAs(refusing, .failure(.permissionDenied(resource: "inner-name"))) },
            identifier: "photo", resourceName: "gallery://?id=photo")
        #expect(openAndWait(failing) == .failure(.permissionDenied(resource: "gallery://?id=photo")))
        #expect(refusing.calls == [.open, .close])
    }

    @Test func waitingAsksTheResolvedSourceOnceTheStoreQueueIsNotCurrent() throws {
        let probe = ProbeDataSource(bytes: Self.bytes, name: "needs-a-thread")
        let answer = DescribedAs(probe, nil, deadlockReason: "the resolved source answers on the calling thread")
        let source = AssetDataSource(store: SourceStore { answer }, identifier: "photo")
        #expect(source.reasonWaitingWouldDeadlock() == nil, "nothing resolved yet")
        _ = try #require(openAndWait(source)).get()
        #expect(source.reasonWaitingWouldDeadlock() == "the resolved source answers on the calling thread")
        source.close()
        #expect(source.reasonWaitingWouldDeadlock() == nil)
    }
}

/// A resolved source whose open answers `description` (or, when `nil`, the base's), and whose
/// `reasonWaitingWouldDeadlock` is `deadlockReason`.
private final class DescribedAs: ForwardingDataSource {
    let base: any BlobDataSource
    let description: Result<BlobSourceDescription, BlobStreamError>?
    let deadlockReason: String?

    init(_ base: any BlobDataSource, _ description: Result<BlobSourceDescription, BlobStreamError>?, deadlockReason: String? = nil) {
        self.base = base
        self.description = description
        self.deadlockReason = deadlockReason
    }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        base.open { [description] result in completion(description ?? result) }
    }

    func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        open(completion: completion)
    }

    func reasonWaitingWouldDeadlock() -> String? { deadlockReason }
}

/// A source whose open call, before it opens the base, signals ``entered`` and waits for
/// ``proceed``: an open still running on the store's thread.
private final class GatedOpenSource: ForwardingDataSource {
    let base: any BlobDataSource
    let entered = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)

    init(_ base: any BlobDataSource) { self.base = base }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        entered.signal()
        proceed.wait()
        base.open(completion: completion)
    }

    func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        open(completion: completion)
    }
}
