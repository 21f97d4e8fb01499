import Foundation
internal import SystemCalls

/// Maps URL schemes to data-source factories, so code that streams a blob by URL does not care
/// where the blob lives — the `URLProtocol.canInit(with:)` idea, for data sources.
///
/// ``BlobInputStream/init(url:mode:)`` and ``BlobInputStream/make(url:mode:registry:)`` go
/// through ``shared``. Built in: `file:`, `http:` and `https:`. Other modules add theirs
/// (`asset:` once an ``AssetStore`` is registered), and apps register their own schemes.
///
/// Thread-safe: register, unregister and look up from any thread.
public final class BlobURLRegistry: Sendable {
    /// Makes a data source for a URL of the registered scheme, or throws why it cannot
    /// (typically ``BlobStreamError/unsupportedURL(url:reason:)``).
    public typealias Factory = @Sendable (URL) throws(BlobStreamError) -> any BlobDataSource

    private let factories: LockedValue<[String: Factory]>

    /// The process-wide registry, with `file:`, `http:` and `https:` registered.
    public static let shared: BlobURLRegistry = {
        let registry = BlobURLRegistry()
        registry.register(scheme: "file") { url throws(BlobStreamError) in
            guard url.isFileURL, !url.path.isEmpty else {
                throw .unsupportedURL(url: url.absoluteString, reason: "a file URL needs a path")
            }
            return FileDataSource(path: url.path)
        }
        registry.registerHTTP()
        return registry
    }()

    /// Creates an empty registry (not even `file:`), for tests or isolated configurations.
    public init() {
        factories = LockedValue([:])
    }

    /// Registers `factory` for `scheme` (case-insensitive), replacing any earlier registration.
    public func register(scheme: String, factory: @escaping Factory) {
        factories.withLock { $0[scheme.lowercased()] = factory }
    }

    /// Removes the registration for `scheme`, if any.
    public func unregister(scheme: String) {
        factories.withLock { _ = $0.removeValue(forKey: scheme.lowercased()) }
    }

    /// The schemes registered now, sorted.
    public var schemes: [String] {
        factories.withLock { $0.keys.sorted() }
    }

    /// Makes a data source for `url`.
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` when the URL has no scheme or
    ///   no factory is registered for it, or whatever the factory throws.
    public func dataSource(for url: URL) throws(BlobStreamError) -> any BlobDataSource {
        guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else {
            throw .unsupportedURL(url: url.absoluteString, reason: "the URL has no scheme")
        }
        guard let factory = factories.withLock({ $0[scheme] }) else {
            let known = schemes.joined(separator: ", ")
            let hint = scheme == "asset" ? "; register an asset store first with register(assetStore:)" : ""
            throw .unsupportedURL(
                url: url.absoluteString,
                reason: "no data source is registered for scheme \"\(scheme)\" (registered: \(known))\(hint)"
            )
        }
        return try factory(url)
    }
}
