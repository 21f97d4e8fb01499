import Foundation

extension BlobURLRegistry {
    /// Makes `scheme://?id=ID` URLs stream asset `ID` of `store` through an ``AssetDataSource``,
    /// replacing any earlier registration of `scheme`. Register one store per scheme; apps with
    /// several libraries use several schemes.
    ///
    /// The factory refuses, with ``BlobStreamError/unsupportedURL(url:reason:)``, URLs that
    /// ``AssetURL/identifier(in:)`` rejects and identifiers that the store's
    /// ``AssetStore/validate(identifier:)`` rejects (`..`, `/` and the like), before anything is
    /// opened. Errors of the resulting source name the URL as given.
    /// - Parameters:
    ///   - store: The store that resolves identifiers.
    ///   - scheme: The URL scheme, `asset` by default (case-insensitive).
    ///   - blockSize: The block size the sources ask the stream for.
    public func register(assetStore store: any AssetStore, scheme: String = "asset", blockSize: Int = AssetDataSource.defaultBlockSize) {
        register(scheme: scheme) { url throws(BlobStreamError) in
            let identifier = try AssetURL.identifier(in: url)
            do throws(AssetStoreError) {
                try store.validate(identifier: identifier)
            } catch {
                throw .unsupportedURL(url: url.absoluteString, reason: error.description)
            }
            return AssetDataSource(store: store, identifier: identifier, resourceName: url.absoluteString, blockSize: blockSize)
        }
    }
}
