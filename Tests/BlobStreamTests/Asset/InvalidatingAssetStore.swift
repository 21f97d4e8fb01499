import BlobStream
import Synchronization

/// Decorates a store so that its representations go stale at chosen offsets, like
/// `ALAssetRepresentation`s when the gallery changed, without changing the asset: a read that
/// would cross a trigger offset stops short at it, and the next read there finds the
/// representation stale. Each trigger fires once across all representations, so a stream that
/// re-resolves continues past it.
final class InvalidatingAssetStore: AssetStore {
    let base: any AssetStore
    private let triggers: Mutex<Set<Int64>>

    init(base: any AssetStore, invalidatingAt offsets: some Sequence<Int64>) {
        self.base = base
        self.triggers = Mutex(Set(offsets))
    }

    /// How many triggers have not fired yet.
    var remainingTriggers: Int { triggers.withLock { $0.count } }

    var callbackQueue: AssetCallbackQueue { base.callbackQueue }

    func validate(identifier: String) throws(AssetStoreError) {
        try base.validate(identifier: identifier)
    }

    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any AssetRepresentation, AssetStoreError>) -> Void) {
        base.resolve(identifier) { [self] result in
            completion(result.map { InvalidatingRepresentation(base: $0, store: self) })
        }
    }

    /// The first unfired trigger in `range`; a trigger at its lower bound fires (is removed).
    fileprivate func trigger(in range: Range<Int64>) -> Int64? {
        triggers.withLock { triggers in
            guard let first = triggers.filter(range.contains).min() else { return nil }
            if first == range.lowerBound { triggers.remove(first) }
            return first
        }
    }
}

private final class InvalidatingRepresentation: AssetRepresentation {
    let base: any AssetRepresentation
    let store: InvalidatingAssetStore
    private let stale = Atomic<Bool>(false)

    init(base: any AssetRepresentation, store: InvalidatingAssetStore) {
        self.base = base
        self.store = store
    }

    var size: Int64 { base.size }
    var version: String? { base.version }

    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult {
        if stale.load(ordering: .relaxed) { return .invalidated }
        switch store.trigger(in: offset..<offset + Int64(buffer.count)) {
        case offset?:
            stale.store(true, ordering: .relaxed)
            return .invalidated
        case let trigger?:
            return base.getBytes(into: UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(trigger - offset))), fromOffset: offset)
        case nil:
            return base.getBytes(into: buffer, fromOffset: offset)
        }
    }
}
