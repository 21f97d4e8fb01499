import BlobStream
import BlobTestSupport
import Dispatch
import Foundation
import Synchronization

/// An in-memory ``AssetStore`` for tests: answers synchronously, on a queue, or never; counts
/// resolves and representation reads; can make every representation handed out so far go stale
/// (a "library change") and can change or delete assets.
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
        var handedOut: [MemoryRepresentation] = []
        var pending: [@Sendable () -> Void] = []
    }

    let callbackQueue: AssetCallbackQueue
    private let answering: Answering
    private let state = Mutex(State())
    /// How many times `resolve` was called.
    let resolves = CallCounter()
    /// How many times representations of this store were read.
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

    /// Makes every representation handed out so far go stale, without changing any asset.
    func invalidateAll() {
        let handedOut = state.withLock { $0.handedOut }
        for representation in handedOut { representation.invalidate() }
    }

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

    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any AssetRepresentation, AssetStoreError>) -> Void) {
        resolves.increment()
        let answer: @Sendable () -> Void = { [self] in
            let representation = state.withLock { state -> MemoryRepresentation? in
                guard let asset = state.assets[identifier] else { return nil }
                let representation = MemoryRepresentation(bytes: asset.bytes, version: "\(identifier)#\(asset.version)", reads: reads)
                state.handedOut.append(representation)
                return representation
            }
            completion(representation.map { .success($0) } ?? .failure(.notFound(identifier: identifier)))
        }
        switch answering {
        case .immediately: answer()
        case .on(let queue): queue.async(execute: answer)
        case .manually: state.withLock { $0.pending.append(answer) }
        }
    }
}

/// A representation of bytes in memory that counts its reads and can be made stale.
final class MemoryRepresentation: AssetRepresentation {
    let bytes: [UInt8]
    let version: String?
    private let reads: CallCounter
    private let stale = Atomic<Bool>(false)

    init(bytes: [UInt8], version: String, reads: CallCounter) {
        self.bytes = bytes
        self.version = version
        self.reads = reads
    }

    var size: Int64 { Int64(bytes.count) }

    func invalidate() { stale.store(true, ordering: .relaxed) }

    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult {
        reads.increment()
        if stale.load(ordering: .relaxed) { return .invalidated }
        let count = min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes { source in
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[Int(offset)..<Int(offset) + count]))
        }
        return .read(count)
    }
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
    let box = Mutex<Result<BlobSourceDescription, BlobStreamError>?>(nil)
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
