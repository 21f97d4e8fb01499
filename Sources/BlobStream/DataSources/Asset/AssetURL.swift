import Foundation

/// The URL form of an asset, `asset://?id=ID` (the scheme may be any registered with
/// ``BlobURLRegistry/register(assetStore:scheme:blockSize:)``), so code that streams blobs by URL
/// does not care whether they live in files, asset stores or on servers.
///
/// The identifier is the percent-encoded value of the single `id` query item. Nothing else is
/// allowed — no host, path, credentials, port, fragment or other query items — so a URL that
/// means something this library does not do (`&width=1920`) fails instead of silently streaming
/// the original bytes.
public enum AssetURL {
    /// The URL of asset `identifier` under `scheme`, or `nil` when `scheme` is not a valid URL
    /// scheme.
    public static func url(identifier: String, scheme: String = "asset") -> URL? {
        URL(string: string(identifier: identifier, scheme: scheme))
    }

    /// The text of ``url(identifier:scheme:)``, also used to name assets in errors.
    static func string(identifier: String, scheme: String = "asset") -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = identifier.addingPercentEncoding(withAllowedCharacters: unreserved) ?? identifier
        return "\(scheme)://?id=\(encoded)"
    }

    /// The (percent-decoded) identifier that `url` addresses.
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` saying what is wrong: no `id`,
    ///   an empty or repeated `id`, another query item, a host, a path or a fragment.
    public static func identifier(in url: URL) throws(BlobStreamError) -> String {
        let text = url.absoluteString
        func refuse(_ reason: String) -> BlobStreamError {
            .unsupportedURL(url: text, reason: "\(reason); an asset URL looks like \(url.scheme ?? "asset")://?id=ID")
        }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            throw refuse("it is not a well-formed URL")
        }
        if let host = components.host, !host.isEmpty {
            throw refuse("it has a host (\"\(host)\")")
        }
        if components.user != nil || components.password != nil || components.port != nil {
            throw refuse("it has credentials or a port")
        }
        if !components.path.isEmpty {
            throw refuse("it has a path (\"\(components.path)\")")
        }
        if components.fragment != nil {
            throw refuse("it has a fragment")
        }
        let items = components.queryItems ?? []
        if let other = items.first(where: { $0.name != "id" }) {
            throw refuse("it has an unsupported query parameter \"\(other.name)\" (only id is allowed)")
        }
        guard let item = items.first else {
            throw refuse("it has no id")
        }
        if items.count > 1 {
            throw refuse("it has more than one id")
        }
        guard let identifier = item.value, !identifier.isEmpty else {
            throw refuse("its id is empty")
        }
        return identifier
    }
}
