#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import SystemCalls
import Synchronization

/// One version of a ``DirectoryAssetStore`` asset, as the store resolves it: a descriptor of the
/// file as it was when resolved, so it is open from the start and its `open` completes at once.
///
/// Every read first checks that the asset's path still names the opened file (same device and
/// inode, so not replaced or removed) and afterwards that the file's version is the one of the
/// open (size, modification and status-change time: not rewritten in place, even with its
/// modification time put back). If either check fails the bytes are discarded and the source
/// goes stale for good (``BlobSourceReadResult/invalidated``), like an `ALAssetRepresentation`
/// after the gallery changed. Because the descriptor keeps the opened inode alive and the store
/// only ever replaces files by renaming new ones over them, the bytes returned always belong to
/// the version its description names. Three system calls per read are cheap next to the large
/// reads an ``AssetDataSource`` makes. ``confirmUnchanged(at:)`` repeats the version check after
/// the last read, when no read is left to notice a rewrite, and checks that no byte follows.
///
/// `close` releases the descriptor; the version is gone then, so a later `open` fails (the
/// ``AssetStore`` contract: resolve again instead). Errors name the asset
/// (`asset://?id=…`), but system errors name the file.
final class DirectoryAssetSource: BlobDataSource {
    let resourceName: String
    private let path: String
    private let description: BlobSourceDescription
    private let status: stat
    private let length: Int64
    /// The opened file; `nil` once closed.
    private let file: LockedValue<OpenedFile?>
    private let stale = Atomic<Bool>(false)

    /// Takes `file`, the opened regular file at `path` of asset `identifier`.
    init(file: OpenedFile, path: String, identifier: String) {
        self.file = LockedValue(file)
        self.path = path
        self.status = file.status
        self.length = Int64(file.status.st_size)
        self.resourceName = AssetURL.string(identifier: identifier)
        self.description = BlobSourceDescription(length: length, version: file.status.versionToken)
    }

    /// `true`: a `pread` never waits for another party.
    var readsImmediately: Bool { true }

    /// Completes at once with the length and version of the file as resolved, unless closed.
    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        guard file.withLock({ $0 != nil }) else {
            return completion(.failure(.sourceFailed(
                resource: resourceName, reason: "this version of the asset was closed; resolve the asset again to read it")))
        }
        completion(.success(description))
    }

    /// One `pread` between the two checks; ``BlobSourceReadResult/end`` at the length.
    func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        guard let file = file.withLock({ $0 }) else { return .failed(.notOpen) }
        if stale.load(ordering: .relaxed) { return .invalidated }
        guard offset >= 0, offset <= length else { return .failed(.invalidOffset(resource: resourceName, offset: offset, length: length)) }
        if offset == length { return .end }
        guard pathStillNamesOpenedFile() else { return goStale() }
        let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(Int(min(Int64(buffer.count), length - offset))))
        switch file.descriptor.pread(into: wanted, at: offset) {
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        case .success(0):
            return goStale()
        case .success(let count):
            return file.change(since: status, at: offset, resource: resourceName, path: path) == nil ? .read(count) : goStale()
        }
    }

    /// The end check (``OpenedFile/confirmEnd(of:length:at:resource:path:seen:)``): a version
    /// change since the resolution is ``BlobStreamError/sourceChanged(resource:offset:reason:)``,
    /// a byte at the length ``BlobStreamError/lengthExceeded(resource:length:)``.
    func confirmUnchanged(at offset: Int64) -> BlobStreamError? {
        file.withLock { $0 }?.confirmEnd(of: status, length: length, at: offset, resource: resourceName, path: path)
    }

    /// ``BlobStreamError/lengthExceeded(resource:length:)`` when a byte follows the length (one
    /// `pread`): a size that lags the content, which the version check cannot see.
    func bytesPastLength() -> BlobStreamError? {
        file.withLock { $0 }?.bytesPast(length, resource: resourceName, path: path)
    }

    /// Releases the descriptor. Idempotent.
    func close() {
        file.withLock { $0 = nil }
    }

    private func goStale() -> BlobSourceReadResult {
        stale.store(true, ordering: .relaxed)
        return .invalidated
    }

    private func pathStillNamesOpenedFile() -> Bool {
        guard case .success(let now) = FileSystem.linkStatus(atPath: path) else { return false }
        return now.st_dev == status.st_dev && now.st_ino == status.st_ino
    }
}
