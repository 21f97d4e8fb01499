@testable import BlobStream
import BlobTestSupport
import Dispatch
import Foundation
import Synchronization
import Testing

/// The ``BlobDataSource`` contract of ``AssetDataSource``, exercised directly (open, read,
/// close) without a stream.
@Suite struct AssetDataSourceTests {
    static let sharedBytes = assetTestBytes(count: 3 * 1024 * 1024 + 12345)
    var bytes: [UInt8] { Self.sharedBytes }

    private func store(_ answering: MemoryAssetStore.Answering = .immediately) -> MemoryAssetStore {
        let store = MemoryAssetStore(answering: answering)
        store.put("photo", bytes)
        return store
    }

    @Test func opensAsynchronouslyAndReadsTheWholeAsset() throws {
        let store = store(.on(DispatchQueue(label: "store")))
        let source = AssetDataSource(store: store, identifier: "photo")
        #expect(source.preferredBlockSize == 1 << 20)
        #expect(source.resourceName == "asset://?id=photo")
        let description = try #require(openAndWait(source)).get()
        #expect(description.length == Int64(bytes.count))
        #expect(description.version == "photo#1")
        let outcome = readToEnd(source, description: description, bufferSize: source.preferredBlockSize)
        #expect(outcome.error == nil)
        #expect(outcome.bytes == bytes)
        // One read of the resolved source per block: 3 full MiB and one partial.
        #expect(store.reads.count == 4)
        #expect(source.sourceReadCount == 4)
        #expect(source.resolveCount == 1)
    }

    @Test func readBeforeOpenIsNotOpen() {
        let source = AssetDataSource(store: store(), identifier: "photo")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .failed(.notOpen))
    }

    @Test func readAtTheLengthIsEndAndBeyondIsInvalidOffset() throws {
        let source = AssetDataSource(store: store(), identifier: "photo")
        _ = try #require(openAndWait(source)).get()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        let length = Int64(bytes.count)
        #expect(source.read(into: buffer, at: length, whenReadable: {}) == .end)
        #expect(source.read(into: buffer, at: length + 1, whenReadable: {}) == .failed(.invalidOffset(resource: source.resourceName, offset: length + 1, length: length)))
        #expect(source.read(into: buffer, at: length - 3, whenReadable: {}) == .read(3))
    }

    @Test func staleResolvedSourceIsInvalidationAndReopeningResolvesAgainAndContinues() throws {
        let store = store()
        let source = AssetDataSource(store: store, identifier: "photo")
        let description = try #require(openAndWait(source)).get()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .read(1000))
        store.invalidateAll()
        #expect(source.read(into: buffer, at: 1000, whenReadable: {}) == .invalidated)
        source.close()
        #expect(store.handedOut.map(\.closes.count) == [1])
        #expect(try #require(openAndWait(source)).get() == description)
        #expect(source.read(into: buffer, at: 1000, whenReadable: {}) == .read(1000))
        #expect(Array(buffer) == Array(bytes[1000..<2000]))
        #expect(source.resolveCount == 2)
        // The stale source is not read again: the second read went to the new resolution.
        #expect(store.handedOut.map(\.reads.count) == [2, 1])
        #expect(store.handedOut.map(\.opens.count) == [1, 1])
    }

    @Test func invalidationAtRandomOffsetsGivesIdenticalBytes() throws {
        var generator = SystemRandomNumberGenerator()
        let offsets = (0..<20).map { _ in Int64.random(in: 0..<Int64(bytes.count), using: &generator) }
        let store = InvalidatingAssetStore(base: store(), invalidatingAt: offsets)
        let source = AssetDataSource(store: store, identifier: "photo")
        let description = try #require(openAndWait(source)).get()
        let outcome = readToEnd(source, description: description, bufferSize: 1 << 20)
        #expect(outcome.error == nil, "offsets \(offsets)")
        #expect(outcome.bytes == bytes, "offsets \(offsets)")
        #expect(outcome.invalidations == Set(offsets).count)
        #expect(store.remainingTriggers == 0)
    }

    @Test func changedAssetIsAnotherDescriptionAfterReopen() throws {
        let store = store()
        let source = AssetDataSource(store: store, identifier: "photo")
        let description = try #require(openAndWait(source)).get()
        store.put("photo", Array(bytes.dropLast()))
        store.invalidateAll()
        let outcome = readToEnd(source, description: description, bufferSize: 1 << 20)
        #expect(outcome.error == .sourceChanged(resource: "asset://?id=photo", offset: 0, reason: "description changed"))
        #expect(try #require(openAndWait(source)).get().length == Int64(bytes.count - 1))
    }

    @Test func vanishedAssetIsNotFoundNamingTheAssetURL() throws {
        let store = store()
        let source = AssetDataSource(store: store, identifier: "photo")
        let description = try #require(openAndWait(source)).get()
        store.delete("photo")
        store.invalidateAll()
        let outcome = readToEnd(source, description: description, bufferSize: 4096)
        #expect(outcome.error == .notFound(resource: "asset://?id=photo"))
        let missing = AssetDataSource(store: store, identifier: "never imported")
        #expect(openAndWait(missing) == .failure(.notFound(resource: "asset://?id=never%20imported")))
    }

    @Test func invalidIdentifierFailsTheOpenWithoutAskingTheStore() {
        let store = store()
        let source = AssetDataSource(store: store, identifier: "bad\u{0}id")
        guard case .failure(.sourceFailed(let resource, let reason))? = openAndWait(source) else {
            Issue.record("expected sourceFailed")
            return
        }
        #expect(resource == "asset://?id=bad%00id")
        #expect(reason.contains("NUL"))
        #expect(store.resolves.count == 0)
    }

    @Test func closeBeforeTheStoreAnswersDropsTheAnswerAndClosesTheLateSourceUnread() throws {
        let store = store(.manually)
        let source = AssetDataSource(store: store, identifier: "photo")
        let calls = CallCounter()
        source.open { _ in calls.increment() }
        source.close()
        #expect(store.answerPending() == 1)
        #expect(calls.count == 0)
        let late = try #require(store.handedOut.first)
        #expect((late.opens.count, late.reads.count, late.closes.count) == (0, 0, 1))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        #expect(source.read(into: buffer, at: 0, whenReadable: {}) == .failed(.notOpen))
        #expect(late.reads.count == 0)
        // The source can be opened again afterwards.
        source.open { result in
            if case .success = result { calls.increment() }
        }
        store.answerPending()
        #expect(calls.count == 1)
    }

    /// The stream is the one place that checks read counts: a resolved source that answers zero
    /// bytes, or more than the buffer holds, fails the stream with an error naming the asset.
    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous], [0, 9])
    func aResolvedSourceThatMiscountsItsReadFailsTheStream(mode: BlobInputStream.Mode, count: Int) throws {
        let store = SourceStore {
            let probe = ProbeDataSource(bytes: Array(repeating: 7, count: 8), name: "scripted-asset")
            probe.onRead { _, _ in .answer(.read(count)) }
            return probe
        }
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "x", blockSize: 8), mode: mode)
        let drained = StreamHarness.drain(stream, chunk: 8, timeout: 10)
        stream.close()
        guard case .sourceFailed(let resource, let reason)? = drained.error else {
            Issue.record("expected sourceFailed, got \(String(describing: drained.error))")
            return
        }
        #expect(resource == "asset://?id=x")
        #expect(reason.contains("\(count) bytes read into a buffer of 8"), "\(reason)")
        #expect(drained.bytes.isEmpty)
    }

    @Test func waitingOnTheStoresSerialQueueWouldDeadlock() {
        let queue = DispatchQueue(label: "photos-callbacks")
        let store = MemoryAssetStore(answering: .on(queue), callbackQueue: .serial(queue))
        let source = AssetDataSource(store: store, identifier: "photo")
        #expect(source.reasonWaitingWouldDeadlock() == nil)
        let onQueue = queue.sync { source.reasonWaitingWouldDeadlock() }
        #expect(onQueue?.contains("serial queue \"photos-callbacks\"") == true)
        let targeting = DispatchQueue(label: "child", target: queue)
        #expect(targeting.sync { source.reasonWaitingWouldDeadlock() } != nil)
        let unrelated = DispatchQueue(label: "unrelated")
        #expect(unrelated.sync { source.reasonWaitingWouldDeadlock() } == nil)
        // Declaring the queue again reuses its mark.
        #expect(queue.sync { AssetCallbackQueue.serial(queue).isCurrent && AssetCallbackQueue.serial(queue).isCurrent })
    }

    @Test func waitingOnTheMainQueueForAMainQueueStoreWouldDeadlock() async {
        let store = MemoryAssetStore(answering: .on(.main), callbackQueue: .main)
        let source = AssetDataSource(store: store, identifier: "photo")
        let onMain = await withCheckedContinuation { continuation in
            DispatchQueue.main.async { continuation.resume(returning: source.reasonWaitingWouldDeadlock()) }
        }
        #expect(onMain?.contains("the main queue") == true)
        let offMain = await Task.detached { source.reasonWaitingWouldDeadlock() }.value
        #expect(offMain == nil)
        #expect(AssetDataSource(store: MemoryAssetStore(), identifier: "x").reasonWaitingWouldDeadlock() == nil)
    }
}
