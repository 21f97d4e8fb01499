import Synchronization
internal import SystemCalls

/// Streams one asset of any ``AssetStore``: every open resolves the identifier again and opens
/// the data source the store resolved it to, which reads go to. A resolved source that goes
/// stale makes the stream open this source again, so the asset is resolved again and the
/// stream continues at the same offset.
///
/// - A resolved source's reads may be expensive, so ``preferredBlockSize`` is large (1 MiB by
///   default): the stream's block cache then reads it about once per MiB whatever the caller's
///   read size. ``sourceReadCount`` counts those reads.
/// - A stale resolved source answers ``BlobSourceReadResult/invalidated``. The stream reopens
///   this source, which resolves the identifier again, and compares the new description's
///   length and version with the first: the stream continues only when the asset is the same
///   version (a handle went stale but the bytes did not change); otherwise it fails with
///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never mixing versions.
/// - Before the stream reports the end, ``confirmUnchanged(at:)`` asks the resolved source
///   whether its version changed after the last read, and whether bytes follow its length.
/// - An asset that vanished fails the open with ``BlobStreamError/notFound(resource:)``, and a
///   resolved source without a length fails it with
///   ``BlobStreamError/sourceFailed(resource:reason:)``. Errors name ``resourceName``
///   (`asset://?id=…`), also those the resolved source reports under its own name; a file path
///   a system error names stays.
/// - ``reasonWaitingWouldDeadlock()`` reports when the calling thread is the store's declared
///   ``AssetStore/callbackQueue``, so a synchronous stream fails at once instead of blocking the
///   thread the store needs, and otherwise passes on the resolved source's answer.
///
/// Not a ``ForwardingDataSource``: the source it forwards to changes with every open, and a
/// stream must own this source, not the resolved one of the moment.
public final class AssetDataSource: BlobDataSource {
    /// The default block size: 1 MiB, so a resolved source is read a few times per MiB.
    public static let defaultBlockSize = 1 << 20

    /// The store that resolves ``identifier``.
    public let store: any AssetStore
    /// The asset's identifier in ``store``.
    public let identifier: String
    /// The name errors use, `asset://?id=…` unless given.
    public let resourceName: String
    /// The block size the stream should read this source with (1 MiB by default).
    public let preferredBlockSize: Int

    private struct State {
        // Bumped by every open and close, so an answer to a superseded open is dropped.
        var generation: UInt64 = 0
        // The source resolved for the current open, while it opens and once it is open.
        var resolution: AssetResolution?
        // The length of the open source; `nil` until its open succeeded.
        var length: Int64?
    }

    private let state = LockedValue(State())
    private let sourceReads = Atomic<Int>(0)
    private let resolutions = Atomic<Int>(0)

    /// Creates a source for the asset `identifier` of `store`. Nothing is resolved until the
    /// stream opens it.
    /// - Parameters:
    ///   - store: The store that holds the asset.
    ///   - identifier: The asset's identifier.
    ///   - resourceName: The name used in errors; by default `asset://?id=` and the identifier.
    ///   - blockSize: The block size to ask the stream for, at least 1.
    public init(store: any AssetStore, identifier: String, resourceName: String? = nil, blockSize: Int = defaultBlockSize) {
        self.store = store
        self.identifier = identifier
        self.resourceName = resourceName ?? AssetURL.string(identifier: identifier)
        self.preferredBlockSize = max(1, blockSize)
    }

    /// How many times a resolved source has been read, over every open of this source.
    public var sourceReadCount: Int { sourceReads.load(ordering: .relaxed) }

    /// How many times the identifier has been resolved (the first open plus every reopen); for
    /// tests (`@testable import`), not part of the API.
    var resolveCount: Int { resolutions.load(ordering: .relaxed) }

    /// Resolves the identifier, opens the resolved source and reports its description. Completes
    /// on whatever queue the store or the resolved source answers on. If ``close()`` (or another
    /// `open`) comes first, the late answer is dropped, `completion` is not called and a source
    /// resolved meanwhile is closed unread: the stream has given up on this open (for example
    /// after its open timeout).
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        resolveAndOpen(at: nil, completion: completion)
    }

    /// Opens as ``open(completion:)`` does, and opens the resolved source at `offset`.
    public func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        resolveAndOpen(at: offset, completion: completion)
    }

    private func resolveAndOpen(at offset: Int64?, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let (generation, superseded) = state.withLock { state in
            state.generation &+= 1
            defer { (state.resolution, state.length) = (nil, nil) }
            return (state.generation, state.resolution)
        }
        superseded?.close()
        do {
            try store.validate(identifier: identifier)
        } catch {
            completion(.failure(error.blobStreamError(resource: resourceName)))
            return
        }
        resolutions.add(1, ordering: .relaxed)
        // Weak: a store that never answers must not keep an abandoned source alive.
        store.resolve(identifier) { [weak self] result in
            guard let self else {
                if case .success(let source) = result { source.close() }
                return
            }
            self.resolved(result, generation: generation, offset: offset, completion: completion)
        }
    }

    private func resolved(
        _ result: Result<any BlobDataSource, AssetStoreError>,
        generation: UInt64,
        offset: Int64?,
        completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void
    ) {
        switch result {
        case .failure(let error):
            guard state.withLock({ $0.generation == generation }) else { return }
            completion(.failure(error.blobStreamError(resource: resourceName)))
        case .success(let source):
            let resolution = AssetResolution(source)
            let current = state.withLock { state in
                guard state.generation == generation else { return false }
                state.resolution = resolution
                return true
            }
            // Superseded before its open could start: nothing else can call it.
            guard current else { return source.close() }
            resolution.open(at: offset) { [weak self] result in
                guard let self else { return resolution.close() }
                if let outcome = self.opened(result, of: resolution, generation: generation) { completion(outcome) }
            }
        }
    }

    /// Takes the resolved source's open answer if it is still the current open's, and checks
    /// that it names a length. Closes the resolved source when the open failed.
    private func opened(
        _ result: Result<BlobSourceDescription, BlobStreamError>,
        of resolution: AssetResolution,
        generation: UInt64
    ) -> Result<BlobSourceDescription, BlobStreamError>? {
        let name = resolution.source.resourceName
        let outcome: Result<BlobSourceDescription, BlobStreamError>
        switch result {
        case .failure(let error):
            outcome = .failure(error.renamingResource(name, to: resourceName))
        case .success(let description):
            if let length = description.length, length >= 0 {
                outcome = .success(description)
            } else {
                let length = description.length.map { "a negative length (\($0))" } ?? "no length"
                outcome = .failure(.sourceFailed(resource: resourceName, reason: "the asset store resolved a source with \(length)"))
            }
        }
        let current = state.withLock { state in
            guard state.generation == generation, state.resolution === resolution else { return false }
            if case .success(let description) = outcome { state.length = description.length } else { state.resolution = nil }
            return true
        }
        // A superseded resolution was closed by whoever superseded it.
        guard current else { return nil }
        if case .failure = outcome { resolution.close() }
        return outcome
    }

    /// Reads from the resolved source, asking for no byte past its length: at the length the
    /// answer is ``BlobSourceReadResult/end`` without a read, beyond it
    /// ``BlobStreamError/invalidOffset(resource:offset:length:)``.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let open = state.withLock { state in state.length.flatMap { length in state.resolution.map { ($0.source, length) } } }
        guard let (source, length) = open else { return .failed(.notOpen) }
        guard offset >= 0, offset <= length else { return .failed(.invalidOffset(resource: resourceName, offset: offset, length: length)) }
        if offset == length { return .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        sourceReads.add(1, ordering: .relaxed)
        let result = source.read(into: wanted, at: offset, whenReadable: whenReadable)
        guard case .failed(let error) = result else { return result }
        return .failed(error.renamingResource(source.resourceName, to: resourceName))
    }

    /// The resolved source's answer: whether its bytes are still the version it was resolved
    /// as, and whether bytes follow its length. A change is
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` and bytes past the length
    /// ``BlobStreamError/lengthExceeded(resource:length:)``, so an asset rewritten after the
    /// last read, or longer than it said, never ends in a success.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        guard let source = state.withLock({ $0.length == nil ? nil : $0.resolution?.source }) else { return nil }
        return source.confirmUnchanged(at: offset)?.renamingResource(source.resourceName, to: resourceName)
    }

    /// Closes the resolved source, and drops any open still waiting for the store or for the
    /// resolved source. Idempotent.
    public func close() {
        let resolution = state.withLock { state in
            state.generation &+= 1
            defer { (state.resolution, state.length) = (nil, nil) }
            return state.resolution
        }
        resolution?.close()
    }

    deinit {
        state.withLock { $0.resolution }?.close()
    }

    /// Explains the deadlock when the calling thread is the store's declared callback queue:
    /// blocking it would stop the store from ever answering. Otherwise asks the resolved source,
    /// which may need a thread of its own as well.
    public func reasonWaitingWouldDeadlock() -> String? {
        let queue = store.callbackQueue
        if queue.isCurrent {
            return "the asset store answers on \(queue), which is the thread that would block waiting for it; "
                + "open the stream in asynchronous mode or from another thread"
        }
        return state.withLock { $0.resolution }?.source.reasonWaitingWouldDeadlock()
    }
}
