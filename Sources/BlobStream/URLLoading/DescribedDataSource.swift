internal import SystemCalls

/// Passes every call through to a source and keeps the description of its first successful
/// open, because a response needs more of it (version, media type) than a
/// ``BlobInputStream`` exposes. The stream still does all reopening and version checking.
final class DescribedDataSource: ForwardingDataSource {
    let base: any BlobDataSource
    private let first = LockedValue<BlobSourceDescription?>(nil)

    init(_ base: any BlobDataSource) {
        self.base = base
    }

    /// The description of the first successful open, once there was one.
    var firstDescription: BlobSourceDescription? { first.withLock { $0 } }

    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        base.open { result in
            self.record(result)
            completion(result)
        }
    }

    func open(at offset: Int64, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        base.open(at: offset) { result in
            self.record(result)
            completion(result)
        }
    }

    private func record(_ result: Result<BlobSourceDescription, BlobStreamError>) {
        guard case .success(let description) = result else { return }
        first.withLock { if $0 == nil { $0 = description } }
    }
}
