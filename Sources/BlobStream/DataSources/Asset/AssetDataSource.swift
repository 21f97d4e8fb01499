import Synchronization

/// Streams one asset of any ``AssetStore``: opening resolves the identifier, reads go to the
/// resolved ``AssetRepresentation``, and a representation that goes stale makes the stream
/// resolve the asset again and continue at the same offset.
///
/// - Representation reads are expensive, so ``preferredBlockSize`` is large (1 MiB by default):
///   the stream's block cache then calls the representation about once per MiB whatever the
///   caller's read size. ``representationReadCount`` counts those calls.
/// - A stale representation (``AssetReadResult/invalidated``, or zero bytes read before the end,
///   which is how `ALAssetRepresentation` signalled it) is reported as
///   ``BlobSourceReadResult/invalidated``. The stream reopens this source, which resolves the
///   identifier again, and compares the new representation's size and version with the first:
///   the stream continues only when the asset is the same version (a handle went stale but the
///   bytes did not change); otherwise it fails with
///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``, never mixing versions.
/// - Before the stream reports the end, ``confirmUnchanged(at:)`` asks the representation
///   whether its version changed after the last read, and whether bytes follow its size.
/// - An asset that vanished fails the open with ``BlobStreamError/notFound(resource:)`` naming
///   ``resourceName`` (`asset://?id=…`).
/// - ``reasonWaitingWouldDeadlock()`` reports when the calling thread is the store's declared
///   ``AssetStore/callbackQueue``, so a synchronous stream fails at once instead of blocking the
///   thread the store needs.
public final class AssetDataSource: BlobDataSource {
    /// The default block size: 1 MiB, so a representation is called a few times per MiB.
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
        // Bumped by every open and close, so an answer to a superseded resolve is dropped.
        var generation: UInt64 = 0
        var representation: (any AssetRepresentation)?
    }

    private let state = Mutex(State())
    private let representationReads = Atomic<Int>(0)
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

    /// How many times ``AssetRepresentation/getBytes(into:fromOffset:)`` has been called, over
    /// every open of this source.
    public var representationReadCount: Int { representationReads.load(ordering: .relaxed) }

    /// How many times the identifier has been resolved (the first open plus every reopen); for
    /// tests (`@testable import`), not part of the API.
    var resolveCount: Int { resolutions.load(ordering: .relaxed) }

    /// Resolves the identifier and reports the representation's size and version. Completes
    /// on whatever queue the store answers on. If ``close()`` (or another `open`) comes first,
    /// the store's late answer is dropped and `completion` is not called: the stream has given
    /// up on this open (for example after its open timeout).
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let generation = state.withLock { state in
            state.generation &+= 1
            state.representation = nil
            return state.generation
        }
        do {
            try store.validate(identifier: identifier)
        } catch {
            completion(.failure(error.blobStreamError(resource: resourceName)))
            return
        }
        resolutions.add(1, ordering: .relaxed)
        // Weak: a store that never answers must not keep an abandoned source alive.
        store.resolve(identifier) { [weak self] result in
            guard let self else { return }
            let outcome = self.accept(result, generation: generation)
            if let outcome { completion(outcome) }
        }
    }

    private func accept(
        _ result: Result<any AssetRepresentation, AssetStoreError>,
        generation: UInt64
    ) -> Result<BlobSourceDescription, BlobStreamError>? {
        state.withLock { state in
            guard state.generation == generation else { return nil }
            switch result {
            case .failure(let error):
                return .failure(error.blobStreamError(resource: resourceName))
            case .success(let representation) where representation.size < 0:
                return .failure(.sourceFailed(resource: resourceName, reason: "the asset store reported a negative size (\(representation.size))"))
            case .success(let representation):
                state.representation = representation
                return .success(BlobSourceDescription(
                    length: representation.size, version: representation.version, mediaType: representation.mediaType
                ))
            }
        }
    }

    /// Reads with one representation call of at most the buffer's size. Never answers
    /// ``BlobSourceReadResult/wouldBlock``: representation reads are local.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard let representation = state.withLock({ $0.representation }) else { return .failed(.notOpen) }
        let size = representation.size
        guard offset >= 0, offset <= size else { return .failed(.invalidOffset(resource: resourceName, offset: offset, length: size)) }
        if offset == size { return .end }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), size - offset))))
        representationReads.add(1, ordering: .relaxed)
        switch representation.getBytes(into: wanted, fromOffset: offset) {
        case .read(let count) where count > 0 && count <= wanted.count:
            return .read(count)
        case .read(0), .invalidated:
            return .invalidated
        case .read(let count):
            return .failed(.sourceFailed(
                resource: resourceName,
                reason: "the asset representation claimed \(count) bytes read into a buffer of \(wanted.count) at offset \(offset)"
            ))
        case .failed(let error):
            return .failed(error)
        }
    }

    /// Asks the representation whether its bytes are still the version it was resolved as
    /// (``AssetRepresentation/changeSinceResolved()``), then whether bytes follow its size
    /// (``AssetRepresentation/hasBytesPastSize()``): a change is
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` and bytes past the size
    /// ``BlobStreamError/lengthExceeded(resource:length:)``, so an asset rewritten after the
    /// last read, or longer than it said, never ends in a success.
    public func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        guard let representation = state.withLock({ $0.representation }) else { return nil }
        if let reason = representation.changeSinceResolved() {
            return .sourceChanged(resource: resourceName, offset: offset, reason: reason)
        }
        do {
            return try representation.hasBytesPastSize() ? .lengthExceeded(resource: resourceName, length: representation.size) : nil
        } catch {
            return error
        }
    }

    /// Drops the representation (releasing what it holds) and any open still waiting for the
    /// store. Idempotent.
    public func close() {
        state.withLock { state in
            state.generation &+= 1
            state.representation = nil
        }
    }

    /// Explains the deadlock when the calling thread is the store's declared callback queue:
    /// blocking it would stop the store from ever answering.
    public func reasonWaitingWouldDeadlock() -> String? {
        let queue = store.callbackQueue
        guard queue.isCurrent else { return nil }
        return "the asset store answers on \(queue), which is the thread that would block waiting for it; "
            + "open the stream in asynchronous mode or from another thread"
    }
}
