#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why an ``AssetStore`` could not resolve, import, replace or remove an asset. Every case names
/// the identifier or path, so the message alone says what to fix.
///
/// ``AssetDataSource`` turns these into ``BlobStreamError`` values that name the asset's URL
/// (see ``blobStreamError(resource:)``); store management calls such as
/// ``DirectoryAssetStore/import(fileAt:)`` throw them directly.
public enum AssetStoreError: Error, Sendable, Hashable {
    /// `identifier` is not one the store could ever hold: empty, too long, or a form that could
    /// reach outside the store (`..`, `/`, percent-encoded bytes, NUL, a symbolic link).
    case invalidIdentifier(String, reason: String)
    /// The store holds no asset named `identifier` (never imported, or removed).
    case notFound(identifier: String)
    /// A system call failed with `errno` while performing `operation` on `path`.
    case system(path: String, operation: String, errno: Int32)
    /// The file offered to the store cannot become an asset (a directory, a device, a socket).
    case unsupportedFile(path: String, reason: String)
    /// The file at `path` changed while it was copied into the store (`reason`: its size or
    /// modification time moved, it ended early, or it is longer than its size): the copy would
    /// be short, or a mix of two versions, so nothing was stored. Import it again once nothing
    /// writes it.
    case changedWhileImported(path: String, reason: String)
    /// Any other failure of a custom store, in its own words.
    case failed(identifier: String, reason: String)
    /// The asset's file at `path` is not a regular file but a `kind` of file (a FIFO, socket,
    /// device or directory), which cannot be read at an offset.
    case notRegularFile(path: String, kind: String)

    /// The same failure as a stream error about `resource` (the asset's URL, as the stream
    /// names it), so a stream reports vanished assets as
    /// ``BlobStreamError/notFound(resource:)`` like missing files.
    public func blobStreamError(resource: String) -> BlobStreamError {
        switch self {
        case .notFound:
            return .notFound(resource: resource)
        case .system(_, _, let code) where code == EACCES || code == EPERM:
            return .permissionDenied(resource: resource)
        case .system(let path, let operation, let code):
            return .system(resource: "\(resource) (\(path))", operation: operation, offset: nil, errno: code)
        case .notRegularFile(let path, "directory"):
            return .isDirectory(path: "\(resource) (\(path))")
        case .notRegularFile(let path, let kind):
            return .notRegularFile(path: "\(resource) (\(path))", kind: kind)
        case .invalidIdentifier, .unsupportedFile, .changedWhileImported, .failed:
            return .sourceFailed(resource: resource, reason: description)
        }
    }
}

extension AssetStoreError: CustomStringConvertible {
    /// A sentence that says what failed and where.
    public var description: String {
        switch self {
        case .invalidIdentifier(let identifier, let reason):
            return "invalid asset identifier \(String(reflecting: identifier)): \(reason)"
        case .notFound(let identifier):
            return "no asset with identifier \(String(reflecting: identifier))"
        case .system(let path, let operation, let code):
            return "\(path): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .unsupportedFile(let path, let reason):
            return "\(path): cannot become an asset: \(reason)"
        case .changedWhileImported(let path, let reason):
            return "\(path): changed while it was imported (\(reason)); nothing was stored: import it again once nothing writes it"
        case .failed(let identifier, let reason):
            return "asset \(String(reflecting: identifier)): \(reason)"
        case .notRegularFile(let path, let kind):
            return "\(path): is a \(kind), not a regular file"
        }
    }
}
