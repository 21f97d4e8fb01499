@testable import BlobStream
import BlobTestSupport
import Dispatch
import Foundation
import Testing

/// Assets streamed through ``BlobInputStream``: call counts, invalidation, replacement,
/// vanishing, URL addressing and the blocked-thread cases.
@Suite struct AssetStreamTests {
    static let sharedBytes = assetTestBytes(count: 1024 * 1024 + 777, seed: 42)
    var bytes: [UInt8] { Self.sharedBytes }

    private func memoryStore(queue: String = "asset-store") -> MemoryAssetStore {
        let store = MemoryAssetStore(answering: .on(DispatchQueue(label: queue)))
        store.put("photo", bytes)
        return store
    }

    @Test(arguments: [1, 1000, 64 * 1024, 256 * 1024, 1024 * 1024])
    func sourceReadsDependOnTheBlockSizeNotTheReadSize(readSize: Int) {
        let store = memoryStore()
        let source = AssetDataSource(store: store, identifier: "photo", blockSize: 256 * 1024)
        let stream = BlobInputStream(dataSource: source)
        #expect(stream.blockSize == 256 * 1024)
        let drain = StreamHarness.drain(stream, chunk: readSize)
        #expect(drain.error == nil)
        #expect(drain.bytes == bytes)
        // 1 MiB + 777 bytes in 256 KiB blocks: 5 calls at most, whatever the read size.
        let blocks = (bytes.count + 256 * 1024 - 1) / (256 * 1024)
        #expect(store.reads.count >= 2 && store.reads.count <= blocks, "\(store.reads.count) calls for \(readSize)-byte reads")
        #expect(source.sourceReadCount == store.reads.count)
        #expect(store.resolves.count == 1)
    }

    @Test func defaultBlockSizeIsOneMebibyte() {
        let store = memoryStore()
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo"))
        #expect(stream.blockSize == 1 << 20)
        #expect(StreamHarness.drain(stream, chunk: 64 * 1024).bytes == bytes)
        #expect(store.reads.count == 2)
    }

    @Test(arguments: [BlobInputStream.Mode.synchronous, .asynchronous])
    func invalidationAtRandomOffsetsGivesIdenticalBytes(mode: BlobInputStream.Mode) throws {
        var generator = SystemRandomNumberGenerator()
        let offsets = (0..<12).map { _ in Int64.random(in: 0..<Int64(bytes.count), using: &generator) } + [0]
        let store = InvalidatingAssetStore(base: memoryStore(), invalidatingAt: offsets)
        let source = AssetDataSource(store: store, identifier: "photo", blockSize: 128 * 1024)
        let stream = BlobInputStream(dataSource: source, mode: mode)
        let drain: StreamDrain
        switch mode {
        case .synchronous:
            drain = StreamHarness.drain(stream, chunk: 10_000)
        case .asynchronous:
            drain = StreamHarness.drain(stream, chunk: 10_000, timeout: 30)
            stream.close()
        }
        #expect(drain.error == nil, "offsets \(offsets)")
        #expect(drain.bytes == bytes, "offsets \(offsets)")
        #expect(store.remainingTriggers == 0)
        #expect(source.resolveCount == 1 + Set(offsets).count)
    }

    @Test(arguments: [0, -1])
    func replacingTheFileWhileStreamingIsAnErrorNotMixedData(sizeChange: Int) throws {
        let folder = try AssetTemporaryFolder()
        let store = try DirectoryAssetStore(directory: folder.path + "/library")
        let identifier = try store.import(fileAt: try folder.file("original", bytes))
        let source = AssetDataSource(store: store, identifier: identifier, blockSize: 64 * 1024)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        var received: [UInt8] = []
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 50_000)
        defer { buffer.deallocate() }
        while received.count < 300_000 {
            let count = stream.read(buffer, maxLength: 50_000)
            try #require(count > 0)
            received += UnsafeBufferPointer(start: buffer, count: count)
        }
        // The same length (and even the same first bytes) is still another version.
        var replacement = bytes.map { $0 ^ 0xFF }
        replacement.removeLast(-sizeChange)
        try store.replace(identifier: identifier, withFileAt: try folder.file("replacement", replacement))
        var result = 0
        repeat {
            result = stream.read(buffer, maxLength: 50_000)
            if result > 0 { received += UnsafeBufferPointer(start: buffer, count: result) }
        } while result > 0
        #expect(result == -1)
        guard case .sourceChanged(let resource, _, let reason)? = stream.blobError else {
            Issue.record("expected sourceChanged, got \(String(describing: stream.blobError))")
            return
        }
        #expect(resource == "asset://?id=\(identifier)")
        #expect(reason.contains(sizeChange == 0 ? "version" : "length"))
        #expect(received == Array(bytes.prefix(received.count)), "bytes of the new version leaked into the stream")
        #expect(received.count < bytes.count)
    }

    @Test func removingTheAssetWhileStreamingIsNotFound() throws {
        let folder = try AssetTemporaryFolder()
        let store = try DirectoryAssetStore(directory: folder.path)
        let identifier = try store.import(fileAt: try folder.file(".original", bytes))
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: identifier, blockSize: 64 * 1024))
        stream.open()
        defer { stream.close() }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1000)
        defer { buffer.deallocate() }
        #expect(stream.read(buffer, maxLength: 1000) == 1000)
        try store.remove(identifier: identifier)
        var result = 0
        repeat { result = stream.read(buffer, maxLength: 1000) } while result > 0
        #expect(result == -1)
        #expect(stream.blobError == .notFound(resource: "asset://?id=\(identifier)"))
    }

    @Test func vanishedAssetFailsTheOpenNamingTheURL() throws {
        let registry = BlobURLRegistry()
        registry.register(assetStore: memoryStore())
        let stream = try BlobInputStream.make(url: try #require(URL(string: "asset://?id=nothing-here")), registry: registry)
        stream.open()
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .notFound(resource: "asset://?id=nothing-here"))
        #expect(stream.streamError?.localizedDescription == "asset://?id=nothing-here: not found")
    }

    @Test func traversalThroughAURLIsRefusedBeforeOpening() throws {
        let folder = try AssetTemporaryFolder()
        let registry = BlobURLRegistry()
        registry.register(assetStore: try DirectoryAssetStore(directory: folder.path))
        let url = try #require(URL(string: "asset://?id=..%2F..%2Fetc%2Fpasswd"))
        #expect(performing: { try BlobInputStream.make(url: url, registry: registry) }, throws: { error in
            guard case .unsupportedURL(_, let reason)? = error as? BlobStreamError else { return false }
            return reason.contains("path separator")
        })
    }

    @Test func aCustomSchemeRegisteredOnTheSharedRegistryStreamsByURL() throws {
        let folder = try AssetTemporaryFolder()
        let store = try DirectoryAssetStore(directory: folder.path + "/gallery")
        let identifier = try store.import(fileAt: try folder.file("photo.jpg", bytes))
        let scheme = "blobtest-gallery"
        BlobURLRegistry.shared.register(assetStore: store, scheme: scheme)
        defer { BlobURLRegistry.shared.unregister(scheme: scheme) }
        let url = try #require(AssetURL.url(identifier: identifier, scheme: scheme))
        let stream = try #require(BlobInputStream(url: url))
        let drain = StreamHarness.drain(stream, chunk: 64 * 1024)
        #expect(drain.error == nil)
        #expect(drain.bytes == bytes)
        #expect(BlobInputStream(url: try #require(URL(string: "\(scheme)://?width=10"))) == nil)
        #expect(BlobInputStream(url: try #require(URL(string: "blobtest-unregistered://?id=\(identifier)"))) == nil)
    }

    @Test func synchronousOpenOnTheQueueTheStoreAnswersOnFailsAtOnce() throws {
        let queue = DispatchQueue(label: "gallery-callbacks")
        let store = MemoryAssetStore(answering: .on(queue), callbackQueue: .serial(queue))
        store.put("photo", bytes)
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo"))
        stream.openTimeout = 60
        let started = Date()
        let status = queue.sync {
            stream.open()
            return stream.streamStatus
        }
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(status == .error)
        guard case .wouldDeadlock(let resource, let reason)? = stream.blobError else {
            Issue.record("expected wouldDeadlock, got \(String(describing: stream.blobError))")
            return
        }
        #expect(resource == "asset://?id=photo")
        #expect(reason.contains("gallery-callbacks"))
        // From any other thread the same store opens fine.
        let other = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo"))
        #expect(StreamHarness.drain(other, chunk: 1 << 20).bytes == bytes)
    }

    @Test func aStoreThatNeverAnswersTimesOut() throws {
        let store = MemoryAssetStore(answering: .manually)
        store.put("photo", bytes)
        let stream = BlobInputStream(dataSource: AssetDataSource(store: store, identifier: "photo"))
        stream.openTimeout = 0.3
        let started = Date()
        stream.open()
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(stream.streamStatus == .error)
        #expect(stream.blobError == .timedOut(resource: "asset://?id=photo", operation: "open", seconds: 0.3))
        // The late answer is dropped, not delivered to the failed stream, and the source it
        // resolved is closed without being opened or read.
        #expect(store.answerPending() == 1)
        #expect(stream.streamStatus == .error)
        let late = try #require(store.handedOut.first)
        #expect((late.opens.count, late.reads.count, late.closes.count) == (0, 0, 1))
    }
}
