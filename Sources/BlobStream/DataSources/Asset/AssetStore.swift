/// The answer of one ``AssetRepresentation/getBytes(into:fromOffset:)`` call.
public enum AssetReadResult: Sendable, Equatable {
    /// `count` bytes (more than zero) were written to the start of the buffer.
    case read(Int)
    /// The representation went stale (the library changed, the handle was revoked). It stays
    /// stale: resolve the identifier again for a fresh representation.
    case invalidated
    /// The read failed for good.
    case failed(BlobStreamError)
}

/// One resolved version of an asset's bytes — the role `ALAssetRepresentation` played for
/// POSInputStream: a size, a version token and offset-based reads.
///
/// ## Contract
/// - ``size`` and ``version`` never change; a new version of the asset is a new representation.
/// - ``getBytes(into:fromOffset:)`` is synchronous and reads local storage, so it may take as
///   long as a disk read but never waits for the network or another queue. It may be expensive
///   per call, which is why ``AssetDataSource`` calls it with large buffers.
/// - A representation may become invalid at any moment; from then on every read answers
///   ``AssetReadResult/invalidated``. (`.read(0)` is taken to mean the same, as it did for
///   `ALAssetRepresentation`.) It must never return bytes of a different version than the one
///   its ``version`` names.
/// - Calls are not concurrent (a data source serialises them), but may come from any thread.
/// - Resources are released when the last reference goes away.
public protocol AssetRepresentation: AnyObject, Sendable {
    /// The asset's length in bytes.
    var size: Int64 { get }

    /// A token that names this version of the asset (for example an inode and modification
    /// time). Two representations with equal tokens must have equal bytes, which is what lets a
    /// stream continue after re-resolving. `nil` when the store cannot tell versions apart; a
    /// stream then notices only changes of ``size``.
    var version: String? { get }

    /// The asset's media type (`image/jpeg`), when the store knows it; `nil` by default.
    var mediaType: String? { get }

    /// Copies bytes starting at `offset` into `buffer`, like
    /// `ALAssetRepresentation.getBytes(_:fromOffset:length:error:)`.
    /// - Parameters:
    ///   - buffer: Where to write; never empty, and never reaching past ``size``.
    ///   - offset: The first byte wanted, from 0 to less than ``size``.
    /// - Returns: How many bytes were written (possibly fewer than asked), or why none were.
    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult

    /// Checks, without waiting, that the bytes behind this representation are still the
    /// version that ``version`` names. ``AssetDataSource`` asks once it has read the last byte and
    /// before the stream reports the end, so an asset rewritten after the last read ends in
    /// ``BlobStreamError/sourceChanged(resource:offset:reason:)`` instead of a success.
    /// - Returns: `nil` when the version is unchanged or the representation cannot tell;
    ///   otherwise what changed, in words.
    func changeSinceResolved() -> String?

    /// Whether the asset has bytes past ``size``: a size that lags the content, which a stream
    /// would otherwise deliver silently short. ``AssetDataSource`` asks once it has read the
    /// last byte and before the stream reports the end, and fails with
    /// ``BlobStreamError/lengthExceeded(resource:length:)`` on `true`.
    /// - Returns: `false` when nothing follows or the representation cannot tell (the default).
    /// - Throws: Why the check itself failed (a read error).
    func hasBytesPastSize() throws(BlobStreamError) -> Bool
}

extension AssetRepresentation {
    /// `nil`: by default a store does not record media types.
    public var mediaType: String? { nil }

    /// `nil`: by default a representation has no check beyond its reads.
    public func changeSinceResolved() -> String? { nil }

    /// `false`: by default a representation's size is taken as its end.
    public func hasBytesPastSize() throws(BlobStreamError) -> Bool { false }
}

/// A library of assets addressed by identifier — a photo gallery, a folder of imported files —
/// that hands out ``AssetRepresentation`` objects asynchronously, the way `ALAssetsLibrary`
/// resolved asset URLs.
///
/// ``AssetDataSource`` streams any store's assets, and
/// ``BlobURLRegistry/register(assetStore:scheme:blockSize:)`` makes them addressable as `asset://?id=ID`.
///
/// ## Contract
/// - ``resolve(_:completion:)`` calls `completion` exactly once, possibly much later, on any
///   thread or on the queue the store declares in ``callbackQueue``.
/// - The store must be safe to call from any thread.
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

    /// Resolves `identifier` to a representation of the asset's current version.
    /// - Parameter completion: Called exactly once with the representation, or with
    ///   ``AssetStoreError/notFound(identifier:)`` when the asset does not exist,
    ///   ``AssetStoreError/invalidIdentifier(_:reason:)``, or another failure.
    func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any AssetRepresentation, AssetStoreError>) -> Void)
}

extension AssetStore {
    /// ``AssetCallbackQueue/any``: by default a store needs no particular thread.
    public var callbackQueue: AssetCallbackQueue { .any }

    /// Accepts what ``AssetIdentifier/validate(_:)`` accepts.
    public func validate(identifier: String) throws(AssetStoreError) {
        try AssetIdentifier.validate(identifier)
    }

    /// Resolves `identifier` to a representation of the asset's current version, suspending
    /// until the store answers.
    /// - Throws: What the store reports, as in ``resolve(_:completion:)``.
    public func resolve(_ identifier: String) async throws(AssetStoreError) -> any AssetRepresentation {
        let result = await withCheckedContinuation { continuation in
            resolve(identifier) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}
