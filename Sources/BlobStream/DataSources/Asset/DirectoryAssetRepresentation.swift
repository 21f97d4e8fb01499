internal import SystemCalls
import Synchronization

/// One open version of a ``DirectoryAssetStore`` asset: a descriptor of the file as it was
/// when resolved.
///
/// Every read first checks that the asset's path still names the opened file (same device and
/// inode, so not replaced or removed) and afterwards that the file's version is the one of the
/// open (size, modification and status-change time: not rewritten in place, even with its
/// modification time put back). If either check fails the bytes are discarded and the
/// representation goes stale for good, like an `ALAssetRepresentation` after the gallery
/// changed. Because the descriptor keeps the opened inode alive and the store only ever
/// replaces files by renaming new ones over them, the bytes returned always belong to the
/// version named by ``version``. Three system calls per read are cheap next to the large
/// reads an ``AssetDataSource`` makes. ``changeSinceResolved()`` repeats the version check
/// after the last read, when no read is left to notice a rewrite.
final class DirectoryAssetRepresentation: AssetRepresentation {
    let size: Int64
    let version: String?
    private let file: OpenedFile
    private let path: String
    private let stale = Atomic<Bool>(false)

    /// Takes `file`, the opened regular file at `path`.
    init(file: OpenedFile, path: String) {
        self.file = file
        self.path = path
        self.size = Int64(file.status.st_size)
        self.version = file.status.versionToken
    }

    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult {
        guard !stale.load(ordering: .relaxed), pathStillNamesOpenedFile() else { return goStale() }
        switch file.descriptor.pread(into: buffer, at: offset) {
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        case .success(0):
            return goStale()
        case .success(let count):
            return changeSinceResolved() == nil ? .read(count) : goStale()
        }
    }

    /// Compares the descriptor's status with the one of the open (one `fstat`).
    func changeSinceResolved() -> String? {
        switch file.descriptor.status() {
        case .failure(let error):
            return "fstat of \(path) failed (errno \(error.rawValue))"
        case .success(let now):
            return now.change(since: file.status)
        }
    }

    /// One `pread` of a byte at ``size``, which must find none.
    func hasBytesPastSize() throws(BlobStreamError) -> Bool {
        switch file.hasBytes(at: size) {
        case .success(let more): return more
        case .failure(let error): throw .system(resource: path, operation: "pread", offset: size, errno: error.rawValue)
        }
    }

    private func goStale() -> AssetReadResult {
        stale.store(true, ordering: .relaxed)
        return .invalidated
    }

    private func pathStillNamesOpenedFile() -> Bool {
        guard case .success(let now) = FileSystem.linkStatus(atPath: path) else { return false }
        return now.st_dev == file.status.st_dev && now.st_ino == file.status.st_ino
    }
}
