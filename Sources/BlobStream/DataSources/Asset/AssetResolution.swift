internal import SystemCalls

/// One source an ``AssetStore`` resolved for one open of an ``AssetDataSource``, and when it may
/// be closed.
///
/// The source's open runs on the store's thread while the stream may already close the asset
/// source (it gave up waiting); closing the resolved source then would be a call concurrent
/// with its open, which the ``BlobDataSource`` contract forbids. So a close that comes while
/// the open call runs is kept, and made by whichever of the open's return and its completion
/// comes first; a close that comes before the open even started means it never starts. Every
/// resolution is closed exactly once, however the open and the close interleave: none leaks,
/// none is closed twice.
final class AssetResolution: Sendable {
    /// The resolved source.
    let source: any BlobDataSource
    private struct Flags {
        // From the resolution until its open call ends: a close now must wait.
        var openRunning = true
        var closeWanted = false
        var closed = false
    }
    private let flags = LockedValue(Flags())

    init(_ source: any BlobDataSource) {
        self.source = source
    }

    /// Opens the source (at `offset`, when one is given) and calls `completion` with its answer;
    /// after a ``close()`` only closes it. Called at most once.
    func open(at offset: Int64?, completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        guard !flags.withLock({ $0.closeWanted }) else { return openCallEnded() }
        let opened: @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void = { [self] result in
            openCallEnded()
            completion(result)
        }
        if let offset { source.open(at: offset, completion: opened) } else { source.open(completion: opened) }
        openCallEnded()
    }

    /// Closes the source now, or as soon as its open call ends. Idempotent.
    func close() {
        let now = flags.withLock { flags in
            flags.closeWanted = true
            guard !flags.openRunning, !flags.closed else { return false }
            flags.closed = true
            return true
        }
        if now { source.close() }
    }

    /// The open returned or completed, whichever came first: makes a close that waited for it.
    private func openCallEnded() {
        let close = flags.withLock { flags in
            guard flags.openRunning else { return false }
            flags.openRunning = false
            guard flags.closeWanted, !flags.closed else { return false }
            flags.closed = true
            return true
        }
        if close { source.close() }
    }
}
