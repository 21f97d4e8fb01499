import BlobStream
import BlobTestSupport
import Dispatch
import Foundation
import Synchronization
import SystemCalls

/// An in-memory ``AssetStore`` for tests: answers synchronously, on a queue, or never; counts
/// resolves and reads of the sources it resolved; can make every source handed out so far go
/// stale (a "library change") and can change or delete assets.
final class MemoryAssetStore: AssetStore {
    enum Answering: Sendable {
        /// Completes before `resolve` returns.
        case immediately
        /// Completes asynchronously on `queue`.
        case on(DispatchQueue)
        /// Keeps completions until ``answerPending()`` is called.
        case manually
    }

    private struct State {
        var assets: [String: (bytes: [UInt8], version: Int)] = [:]
        var handedOut: [MemoryAssetSource] = []
        var pending: [@Sendable () -> Void] = []
    }

    let callbackQueue: AssetCallbackQueue
    private let answering: Answering
    private let state = LockedValue(State())
    /// How many times `resolve` was called.
    let resolves = CallCounter()
    /// How many times sources this store resolved were read.
    let reads = CallCounter()

    init(answering: Answering = .immediately, callbackQueue: AssetCallbackQueue = .any) {
        self.answering = answering
        self.callbackQueue = callbackQueue
    }

    /// Stores `bytes` under `identifier` as a new version.
    func put(_ identifier: String, _ bytes: [UInt8]) {
        state.withLock { state in
            let version = (state.assets[identifier]?.version ?? 0) + 1
            state.assets[identifier] = (bytes, version)
        }
    }

    func delete(_ identifier: String) {
        state.withLock { _ = $0.assets.removeValue(forKey: identifier) }
    }

    /// Makes every source handed out so far go stale, without changing any asset.
    func invalidateAll() {
        for source in handedOut { source.invalidate() }
    }

    /// The sources resolved so far, in order.
    var handedOut: [MemoryAssetSource] { state.withLock { $0.handedOut } }

    /// Runs the completions ``Answering/manually`` kept, and reports how many there were.
    @discardableResult
    func answerPending() -> Int {
        let pending = state.withLock { state in
            defer { state.pending.removeAll() }
            return state.pending
        }
        for answer in pending { answer() }
        return pending.count
    }

    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any BlobDataSource, AssetStoreError>) -> Void) {
        resolves.increment()
        let answer: @Sendable () -> Void = { [self] in
            let source = state.withLock { state -> MemoryAssetSource? in
                guard let asset = state.assets[identifier] else { return nil }
                let source = MemoryAssetSource(
                    bytes: asset.bytes, version: "\(identifier)#\(asset.version)", name: "memory-asset:\(identifier)", reads: reads)
                state.handedOut.append(source)
                return source
            }
            completion(source.map { .success($0) } ?? .failure(.notFound(identifier: identifier)))
        }
        switch answering {
        case .immediately: answer()
        case .on(let queue): queue.async(execute: answer)
        case .manually: state.withLock { $0.pending.append(answer) }
        }
    }
}

/// One version of an asset in memory, as ``MemoryAssetStore`` resolves it: a
/// ``MemoryDataSource`` with a version, that counts its opens, reads and closes and can be made
/// stale (then every read answers `invalidated`).
final class MemoryAssetSource: ForwardingDataSource {
    let base: any BlobDataSource
    let version: String
    private let storeReads: CallCounter
    private let stale = Atomic<Bool>(false)
    /// Calls of this source.
    let opens = CallCounter(), reads = CallCounter(), closes = CallCounter()

    init(bytes: [UInt8], version: String, name: String, reads: CallCounter) {
        self.base = MemoryDataSource(data: Data(bytes), name: name)
        self.version = version
        self.storeReads = reads
    }

    func invalidate() { stale.store(true, ordering: .relaxed) }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        opens.increment()
        base.open { [version] result in completion(result.map { BlobSourceDescription(length: $0.length, version: version) }) }
    }

    func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        open(completion: completion)
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        reads.increment()
        storeReads.increment()
        if stale.load(ordering: .relaxed) { return .invalidated }
        return base.read(into: buffer, at: offset, whenReadable: whenReadable)
    }

    func close() { closes.increment() }
}

/// A thread-safe call counter.
final class CallCounter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}

/// Deterministic pseudo-random bytes (a xorshift generator), so failures reproduce.
func assetTestBytes(count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var state = seed | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}

/// A fresh scratch folder (``TempFiles/makeDirectory(in:prefix:)``), removed when the value
/// goes away.
final class AssetTemporaryFolder: Sendable {
    let path: String

    init() throws {
        path = try TempFiles.makeDirectory(prefix: "blobstream-asset-tests")
    }

    deinit {
        TempFiles.remove(path)
    }

    /// Writes `bytes` to a new file in the folder and returns its path.
    func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }
}

/// Opens `source` and waits (at most `timeout` seconds) for its completion.
func openAndWait(_ source: any BlobDataSource, timeout: Double = 10) -> Result<BlobSourceDescription, BlobStreamError>? {
    let box = LockedValue<Result<BlobSourceDescription, BlobStreamError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    source.open { result in
        box.withLock { $0 = result }
        done.signal()
    }
    guard done.wait(timeout: .now() + timeout) == .success else { return nil }
    return box.withLock { $0 }
}

/// What reading a source directly, the way a stream does, produced.
struct DirectReadOutcome {
    var bytes: [UInt8] = []
    var invalidations = 0
    var error: BlobStreamError?
}

/// Reads `source` (already open with `description`) from `offset` to the end with
/// `bufferSize`-byte reads, and on invalidation closes, reopens and compares descriptions the
/// way ``BlobInputStream`` does, so source tests need no stream.
func readToEnd(
    _ source: any BlobDataSource,
    description: BlobSourceDescription,
    from offset: Int64 = 0,
    bufferSize: Int
) -> DirectReadOutcome {
    var outcome = DirectReadOutcome()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 16)
    defer { buffer.deallocate() }
    var position = offset
    while true {
        switch source.read(into: buffer, at: position, whenReadable: {}) {
        case .read(let count):
            outcome.bytes += buffer.prefix(count)
            position += Int64(count)
        case .end:
            return outcome
        case .wouldBlock:
            outcome.error = .sourceFailed(resource: source.resourceName, reason: "unexpected wouldBlock")
            return outcome
        case .failed(let error):
            outcome.error = error
            return outcome
        case .invalidated:
            outcome.invalidations += 1
            source.close()
            switch openAndWait(source) {
            case nil:
                outcome.error = .timedOut(resource: source.resourceName, operation: "reopen", seconds: 10)
                return outcome
            case .failure(let error)?:
                outcome.error = error
                return outcome
            case .success(let reopened)? where reopened != description:
                outcome.error = .sourceChanged(resource: source.resourceName, offset: position, reason: "description changed")
                return outcome
            case .success?:
                continue
            }
        }
    }
}

/// A store whose every resolution is a new source from `make`, answered before `resolve`
/// returns: for resolved sources that break their contract or report what a test chooses.
final class SourceStore: AssetStore {
    private let make: @Sendable () -> any BlobDataSource
    /// How many times `resolve` was called.
    let resolves = CallCounter()

    init(_ make: @escaping @Sendable () -> any BlobDataSource) {
        self.make = make
    }

    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any BlobDataSource, AssetStoreError>) -> Void) {
        resolves.increment()
        completion(.success(make()))
    }
}
