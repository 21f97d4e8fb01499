import BlobStream
import Synchronization
import SystemCalls

/// Decorates a store so that the sources it resolves go stale at chosen offsets, like
/// `ALAssetRepresentation`s when the gallery changed, without changing the asset: a read that
/// would cross a trigger offset stops short at it, and the next read there finds the source
/// stale. Each trigger fires once across all resolved sources, so a stream that re-resolves
/// continues past it.
final class InvalidatingAssetStore: AssetStore {
    let base: any AssetStore
    private let triggers: LockedValue<Set<Int64>>

    init(base: any AssetStore, invalidatingAt offsets: some Sequence<Int64>) {
        self.base = base
        self.triggers = LockedValue(Set(offsets))
    }

    /// How many triggers have not fired yet.
    var remainingTriggers: Int { triggers.withLock { $0.count } }

    var callbackQueue: AssetCallbackQueue { base.callbackQueue }

    func validate(identifier: String) throws(AssetStoreError) {
        try base.validate(identifier: identifier)
    }

    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any BlobDataSource, AssetStoreError>) -> Void) {
        base.resolve(identifier) { [self] result in
            completion(result.map { InvalidatingSource(base: $0, store: self) })
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

private final class InvalidatingSource: ForwardingDataSource {
    let base: any BlobDataSource
    let store: InvalidatingAssetStore
    private let stale = Atomic<Bool>(false)

    init(base: any BlobDataSource, store: InvalidatingAssetStore) {
        self.base = base
        self.store = store
    }

    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        if stale.load(ordering: .relaxed) { return .invalidated }
        switch store.trigger(in: offset..<offset + Int64(buffer.count)) {
        case offset?:
            stale.store(true, ordering: .relaxed)
            return .invalidated
        case let trigger?:
            let short = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(trigger - offset)))
            return base.read(into: short, at: offset, whenReadable: whenReadable)
        case nil:
            return base.read(into: buffer, at: offset, whenReadable: whenReadable)
        }
    }
}
