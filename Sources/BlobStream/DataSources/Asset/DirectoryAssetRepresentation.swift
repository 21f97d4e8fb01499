#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One open version of a ``DirectoryAssetStore`` asset: a descriptor of the file as it was
/// when resolved.
///
/// Every read first checks that the asset's path still names the opened file (same device and
/// inode, so not replaced or removed) and afterwards that the file kept its size and
/// modification time (not rewritten in place). If either check fails the bytes are discarded
/// and the representation goes stale for good, like an `ALAssetRepresentation` after the
/// gallery changed. Because the descriptor keeps the opened inode alive and the store only
/// ever replaces files by renaming new ones over them, the bytes returned always belong to
/// the version named by ``identity``. Three system calls per read are cheap next to the large
/// reads an ``AssetDataSource`` makes.
final class DirectoryAssetRepresentation: AssetRepresentation {
    let size: Int64
    let identity: String?
    private let fd: Int32
    private let path: String
    private let opened: stat
    private let stale = Atomic<Bool>(false)

    /// Takes ownership of `fd`, an open descriptor of the regular file at `path` whose status
    /// is `status`.
    init(fd: Int32, path: String, status: stat) {
        self.fd = fd
        self.path = path
        self.opened = status
        self.size = Int64(status.st_size)
        self.identity = status.versionToken
    }

    deinit {
        Syscall.close(fd)
    }

    func getBytes(into buffer: UnsafeMutableRawBufferPointer, fromOffset offset: Int64) -> AssetReadResult {
        guard !stale.load(ordering: .relaxed), pathStillNamesOpenedFile() else { return goStale() }
        switch Syscall.pread(fd, buffer, at: offset) {
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
        guard case .success(let now) = AssetFileCalls.linkStatus(path) else { return false }
        return now.st_dev == opened.st_dev && now.st_ino == opened.st_ino
    }

    private func fileUnchangedSinceOpen() -> Bool {
        guard case .success(let now) = Syscall.fileStatus(fd) else { return false }
        return now.st_size == opened.st_size
            && now.st_mtim.tv_sec == opened.st_mtim.tv_sec
            && now.st_mtim.tv_nsec == opened.st_mtim.tv_nsec
    }
}
