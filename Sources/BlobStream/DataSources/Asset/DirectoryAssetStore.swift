import Dispatch
import Foundation
internal import SystemCalls

/// An ``AssetStore`` that works anywhere: a library folder in which each asset is the regular
/// file `DIRECTORY/ID`, under a stable identifier the store chose when the file was imported.
///
/// - ``import(fileAt:)`` copies a file in under a new random identifier and
///   ``replace(identifier:withFileAt:)`` puts a new version in place. Both copy into a
///   temporary file (named with a leading `.`, which identifiers may not have) and rename it
///   into place, so readers see the old file or the whole new one, never a partial copy.
/// - Replacing or removing an asset invalidates the sources resolved for it, the way saving to
///   the gallery invalidated `ALAssetRepresentation`s; their reads answer
///   ``BlobSourceReadResult/invalidated`` and never return bytes of the new version. A stream
///   that re-resolves then finds a different ``BlobSourceDescription/version`` (a new inode,
///   even when size and bytes are equal) and fails with
///   ``BlobStreamError/sourceChanged(resource:offset:reason:)``, or finds no asset and fails with
///   ``BlobStreamError/notFound(resource:)``.
/// - Identifiers must pass ``AssetIdentifier/validateFileName(_:)`` (no `..`, `/`, `%`, leading
///   `.`, NUL), and an asset path that is a symbolic link is refused rather than followed, so
///   nothing outside the folder can be reached through this store.
///
/// Resolution runs on a private queue and completes there (``callbackQueue`` is
/// ``AssetCallbackQueue/any``), so synchronous streams may open assets from any thread.
public final class DirectoryAssetStore: AssetStore {
    /// The library folder, as an absolute path.
    public let directory: String
    private let queue = DispatchQueue(label: "BlobStream.DirectoryAssetStore", attributes: .concurrent)

    /// Opens the library folder at `directory`, creating it (and missing parents) if needed.
    /// - Throws: ``AssetStoreError/system(path:operation:errno:)`` when the folder cannot be
    ///   created or is not a directory.
    public init(directory: String) throws(AssetStoreError) {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        if case .failure(let error) = FileSystem.status(atPath: absolute), error.rawValue == ENOENT {
            try? FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
        }
        switch FileSystem.status(atPath: absolute) {
        case .failure(let error):
            throw .system(path: absolute, operation: "create the library folder", errno: error.rawValue)
        case .success(let status) where !status.isDirectory:
            throw .system(path: absolute, operation: "open the library folder", errno: ENOTDIR)
        case .success:
            self.directory = absolute
        }
    }

    /// Accepts only identifiers that are plain file names (``AssetIdentifier/validateFileName(_:)``).
    public func validate(identifier: String) throws(AssetStoreError) {
        try AssetIdentifier.validateFileName(identifier)
    }

    /// The path of asset `identifier`, whether or not it exists.
    /// - Throws: ``AssetStoreError/invalidIdentifier(_:reason:)``.
    public func path(of identifier: String) throws(AssetStoreError) -> String {
        try validate(identifier: identifier)
        return directory + "/" + identifier
    }

    /// Opens the asset's file on the store's queue and completes there, with a source that is
    /// open already and reads with `pread`: every read checks that the path still names the
    /// opened file and that the file was not rewritten, and goes stale for good otherwise.
    public func resolve(_ identifier: String, completion: @escaping @Sendable (Result<any BlobDataSource, AssetStoreError>) -> Void) {
        queue.async { [self] in
            completion(Result { () throws(AssetStoreError) in try source(of: identifier) })
        }
    }

    private func source(of identifier: String) throws(AssetStoreError) -> any BlobDataSource {
        let path = try path(of: identifier)
        switch OpenedFile.open(path, followFinalLink: false) {
        case .success(let file):
            return DirectoryAssetSource(file: file, path: path, identifier: identifier)
        case .failure(.system(let operation, let error)):
            throw Self.lookupError(error, identifier: identifier, path: path, operation: operation)
        case .failure(.isDirectory):
            throw .notRegularFile(path: path, kind: "directory")
        case .failure(.notRegularFile(let kind)):
            throw .notRegularFile(path: path, kind: kind)
        }
    }

    /// Copies the regular file at `path` into the library under a new identifier.
    /// - Returns: The identifier, a lowercase UUID.
    /// - Throws: ``AssetStoreError/system(path:operation:errno:)`` when `path` cannot be read or
    ///   the copy fails; ``AssetStoreError/unsupportedFile(path:reason:)`` when `path` is not a
    ///   regular file.
    public func `import`(fileAt path: String) throws(AssetStoreError) -> String {
        let identifier = UUID().uuidString.lowercased()
        try install(fileAt: path, as: directory + "/" + identifier)
        return identifier
    }

    /// Makes asset `identifier` a copy of the file at `path`: a new version (a new inode), so
    /// the sources resolved for the old one go stale.
    /// - Throws: ``AssetStoreError/notFound(identifier:)`` when there is no such asset,
    ///   ``AssetStoreError/invalidIdentifier(_:reason:)``, or the errors of ``import(fileAt:)``.
    public func replace(identifier: String, withFileAt path: String) throws(AssetStoreError) {
        let destination = try existingAssetPath(identifier)
        try install(fileAt: path, as: destination)
    }

    /// Deletes asset `identifier`; the sources resolved for it go stale and resolving it again fails
    /// with ``AssetStoreError/notFound(identifier:)``.
    /// - Throws: ``AssetStoreError/notFound(identifier:)``,
    ///   ``AssetStoreError/invalidIdentifier(_:reason:)``, or
    ///   ``AssetStoreError/system(path:operation:errno:)``.
    public func remove(identifier: String) throws(AssetStoreError) {
        let path = try existingAssetPath(identifier)
        if let error = FileSystem.unlink(path) {
            throw Self.lookupError(error, identifier: identifier, path: path, operation: "unlink")
        }
    }

    private func existingAssetPath(_ identifier: String) throws(AssetStoreError) -> String {
        let path = try path(of: identifier)
        switch FileSystem.linkStatus(atPath: path) {
        case .failure(let error):
            throw Self.lookupError(error, identifier: identifier, path: path, operation: "lstat")
        case .success(let status) where status.isSymbolicLink:
            throw Self.symbolicLink(identifier)
        case .success(let status) where !status.isRegularFile:
            throw .notRegularFile(path: path, kind: status.kind)
        case .success:
            return path
        }
    }

    /// Copies `source` to a temporary file in the library, flushes it and renames it to
    /// `destination`, removing the temporary file on any failure.
    private func install(fileAt source: String, as destination: String) throws(AssetStoreError) {
        let input: OpenedFile
        switch OpenedFile.open(source) {
        case .success(let file): input = file
        case .failure(.system(let operation, let error)): throw .system(path: source, operation: operation, errno: error.rawValue)
        case .failure(.isDirectory): throw .unsupportedFile(path: source, reason: "it is a directory")
        case .failure(.notRegularFile(let kind)): throw .unsupportedFile(path: source, reason: "it is a \(kind), not a regular file")
        }
        let temporary = directory + "/.import-" + UUID().uuidString.lowercased()
        var failure: AssetStoreError?
        switch FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions: 0o644) {
        case .failure(let error):
            throw .system(path: temporary, operation: "create", errno: error.rawValue)
        case .success(let output):
            let size = Int64(input.status.st_size)
            switch Self.copy(size, from: input.descriptor, to: output) {
            case .failure(let copy):
                failure = .system(path: copy.operation == "read" ? source : temporary, operation: copy.operation, errno: copy.errno.rawValue)
            case .success(let copied):
                // The copy is the version opened, whole, or nothing (README, "Sizes that lie").
                if let change = input.confirmEnd(of: input.status, length: size, at: copied, resource: source, path: source) {
                    failure = .changedWhileImported(path: source, reason: Self.reason(change))
                } else if copied < size {
                    failure = .changedWhileImported(path: source, reason: "it ended at byte \(copied), before its size of \(size) bytes")
                } else if let error = output.sync() {
                    failure = .system(path: temporary, operation: "fsync", errno: error.rawValue)
                }
            }
        }
        if failure == nil, let error = FileSystem.rename(temporary, to: destination) {
            failure = .system(path: destination, operation: "rename", errno: error.rawValue)
        }
        if let failure {
            _ = FileSystem.unlink(temporary)
            throw failure
        }
    }

    /// Copies at most `size` bytes from `source` (from its current position) to `destination`,
    /// until `size` or the end: the bytes copied, or the failed operation's name and `errno`.
    private static func copy(
        _ size: Int64, from source: FileDescriptor, to destination: FileDescriptor
    ) -> Result<Int64, CopyFailure> {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < size {
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), size - copied))))
            switch source.read(into: room) {
            case .failure(let error):
                return .failure(CopyFailure(operation: "read", errno: error))
            case .success(0):
                return .success(copied)
            case .success(let count):
                if let error = destination.writeAll(UnsafeRawBufferPointer(rebasing: buffer.prefix(count))) {
                    return .failure(CopyFailure(operation: "write", errno: error))
                }
                copied += Int64(count)
            }
        }
        return .success(copied)
    }

    /// A failed `read` or `write` of ``copy(_:from:to:)``.
    private struct CopyFailure: Error {
        let operation: String
        let errno: Errno
    }

    /// What `change` (a version change, or bytes past the size) says, for the import's error.
    private static func reason(_ change: BlobStreamError) -> String {
        switch change {
        case .sourceChanged(_, _, let reason): reason
        case .lengthExceeded(_, let length): "it has bytes past its size of \(length) bytes"
        default: change.description
        }
    }

    private static func lookupError(_ error: Errno, identifier: String, path: String, operation: String) -> AssetStoreError {
        switch error.rawValue {
        case ENOENT: return .notFound(identifier: identifier)
        case ELOOP: return symbolicLink(identifier)
        default: return .system(path: path, operation: operation, errno: error.rawValue)
        }
    }

    private static func symbolicLink(_ identifier: String) -> AssetStoreError {
        .invalidIdentifier(identifier, reason: "the asset is a symbolic link, which could point outside the library folder")
    }
}
