import Synchronization

/// One open version of a ``DirectoryAssetStore`` asset: a descriptor of the file as it was
/// when resolved.
///
/// Every read first checks that the asset's path still names the opened file (same device and
/// inode, so not replaced or removed) and afterwards that the file kept its size and
/// modification time (not rewritten in place). If either check fails the bytes are discarded and the
/// representation goes stale for good, like an `ALAssetRepresentation` after the gallery
/// changed. Because the descriptor keeps the opened inode alive and the store only ever
/// replaces files by renaming new ones over them, the bytes returned always belong to the
/// version named by ``identity``. Three system calls per read are cheap next to the large
/// reads an ``AssetDataSource`` makes.
final class DirectoryAssetRepresentation: AssetRepresentation {
    let size: Int64
    let identity: String?
    private let file: OpenedFile
    private let path: String
    private let stale = Atomic<Bool>(false)

    /// Takes `file`, the opened regular file at `path`.
    init(file: OpenedFile, path: String) {
        self.file = file
        self.path = path
        self.size = Int64(file.status.st_size)
        self.identity = file.status.versionToken
    }

    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult {
        guard !stale.load(ordering: .relaxed), pathStillNamesOpenedFile() else { return goStale() }
        switch file.descriptor.pread(into: buffer, at: offset) {
        case .failure(let error):
            return .failed(.system(resource: path, operation: "pread", offset: offset, errno: error.rawValue))
        case .success(0):
            return goStale()
        case .success(let count):
            return fileUnchangedSinceOpen() ? .read(count) : goStale()
        }
    }

    private func goStale() -> AssetReadResult {
        stale.store(true, ordering: .relaxed)
        return .invalidated
    }

    private func pathStillNamesOpenedFile() -> Bool {
        guard case .success(let now) = Syscall.linkStatus(path) else { return false }
        return now.st_dev == file.status.st_dev && now.st_ino == file.status.st_ino
    }

    private func fileUnchangedSinceOpen() -> Bool {
        guard case .success(let now) = file.descriptor.status() else { return false }
        return now.st_size == file.status.st_size
            && now.modificationTime.tv_sec == file.status.modificationTime.tv_sec
            && now.modificationTime.tv_nsec == file.status.modificationTime.tv_nsec
    }
}
