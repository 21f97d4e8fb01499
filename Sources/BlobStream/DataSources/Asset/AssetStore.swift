/// A library of assets addressed by identifier — a photo gallery, a folder of imported files —
/// that resolves an identifier asynchronously to a ``BlobDataSource`` of the asset's current
/// version, the way `ALAssetsLibrary` resolved asset URLs to representations.
///
/// ``AssetDataSource`` streams any store's assets, and
/// ``BlobURLRegistry/register(assetStore:scheme:blockSize:)`` makes them addressable as `asset://?id=ID`.
///
/// ## Contract
/// - ``resolve(_:completion:)`` calls `completion` exactly once, possibly much later, on any
///   thread or on the queue the store declares in ``callbackQueue``.
/// - The store must be safe to call from any thread.
/// - A resolved source is one version of the asset, and it keeps the ``BlobDataSource``
///   contract with these additions:
///   - its description names a non-negative `length`, and its `version` names that version:
///     two resolutions with equal versions have equal bytes, which is what lets a stream
///     continue after resolving again (`nil` when the store cannot tell versions apart; a
///     stream then notices only changes of length);
///   - it never returns bytes of another version: once stale (the library changed, a handle
///     was revoked) it answers ``BlobSourceReadResult/invalidated`` for every later read, and
///     the stream resolves the asset again;
///   - ``AssetDataSource`` opens it once (it may complete at once: a source that is already
///     open when resolved), reads it and closes it, which releases what it holds. It need not
///     open again after `close`: every open of an ``AssetDataSource`` resolves anew. It is
///     asked ``BlobDataSource/confirmUnchanged(at:)`` before the end, where it reports a
///     version changed after the last read, or bytes past its length
///     (``BlobStreamError/lengthExceeded(resource:length:)``).
///   - its reads may be expensive per call, which is why ``AssetDataSource`` asks for large
///     blocks;
///   - errors it reports under its own `resourceName` reach the caller under the name of the
///     ``AssetDataSource`` (the URL as given); other names in them (a file path) stay.
public protocol AssetStore: AnyObject, Sendable {
    /// Where `resolve` completions run. Declare the one queue the store needs (for example the
    /// main queue), so a synchronous stream fails with
    /// ``BlobStreamError/wouldDeadlock(resource:reason:)`` instead of blocking that queue
    /// while waiting for it. The default is ``AssetCallbackQueue/any``.
    var callbackQueue: AssetCallbackQueue { get }

    /// Checks, without touching storage, that `identifier` is one the store could hold, so that
    /// a malformed or malicious identifier (`..`, `a/b`) is refused before anything is opened.
    /// The default accepts every identifier that ``AssetIdentifier/validate(_:)`` accepts.
    /// - Throws: ``AssetStoreError/invalidIdentifier(_:reason:)``.
    func validate(identifier: String) throws(AssetStoreError)

    /// Resolves `identifier` to a data source of the asset's current version.
    /// - Parameter completion: Called exactly once with the source, or with
    ///   ``AssetStoreError/notFound(identifier:)`` when the asset does not exist,
    ///   ``AssetStoreError/invalidIdentifier(_:reason:)``, or another failure.
    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any BlobDataSource, AssetStoreError>) -> Void)
}

extension AssetStore {
    /// ``AssetCallbackQueue/any``: by default a store needs no particular thread.
    public var callbackQueue: AssetCallbackQueue { .any }

    /// Accepts what ``AssetIdentifier/validate(_:)`` accepts.
    public func validate(identifier: String) throws(AssetStoreError) {
        try AssetIdentifier.validate(identifier)
    }

    /// Resolves `identifier` to a data source of the asset's current version, suspending until
    /// the store answers. The caller owns the source: it opens, reads and closes it.
    /// - Throws: What the store reports, as in ``resolve(_:completion:)``.
    public func resolve(_ identifier: String) async throws(AssetStoreError) -> any BlobDataSource {
        let result = await withCheckedContinuation { continuation in
            resolve(identifier) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}
