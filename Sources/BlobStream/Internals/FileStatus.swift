#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a file's status says about its type and its version.
extension stat {
    /// Whether this is a directory.
    var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    /// Whether this is a regular file.
    var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }

    /// What kind of file this is, in the words of ``BlobStreamError/notRegularFile(path:kind:)``:
    /// "FIFO", "socket", "character device", "block device", "symbolic link", "directory",
    /// "regular file".
    var kind: String {
        switch st_mode & S_IFMT {
        case S_IFIFO: return "FIFO"
        case S_IFSOCK: return "socket"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        case S_IFLNK: return "symbolic link"
        case S_IFDIR: return "directory"
        case S_IFREG: return "regular file"
        default: return "special file"
        }
    }

    /// The time of the last change of the bytes (which can be set back by anyone who may write).
    var modificationTime: timespec {
        #if canImport(Darwin)
        st_mtimespec
        #else
        st_mtim
        #endif
    }

    /// Device, inode, size and modification time: changes when the file is replaced or rewritten.
    var versionToken: String {
        "\(st_dev):\(st_ino):\(st_size):\(modificationTime.tv_sec).\(modificationTime.tv_nsec)"
    }
}
