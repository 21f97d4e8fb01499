#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls on paths; calls on an open file are methods of ``FileDescriptor``. They
/// return the raw result and `errno`, leaving the policy (which error to report) to the caller.
package enum FileSystem {
    /// `stat(2)` following symbolic links: the status, or `errno`.
    package static func status(atPath path: String) -> Result<stat, Errno> {
        var status = stat()
        return valueOrErrno { systemStat(path, &status) }.map { _ in status }
    }

    /// `lstat(2)`: the status of the path itself, not of what a link points to.
    package static func linkStatus(atPath path: String) -> Result<stat, Errno> {
        var status = stat()
        return valueOrErrno { systemLstat(path, &status) }.map { _ in status }
    }

    /// `rename(2)`: atomically makes `to` name the file `from` named, replacing any file.
    package static func rename(_ from: String, to: String) -> Errno? {
        nothingOrErrno { systemRename(from, to) }
    }

    /// `unlink(2)`; removes a link itself, never what it points to.
    package static func unlink(_ path: String) -> Errno? {
        nothingOrErrno { systemUnlink(path) }
    }

    /// `mkdir(2)` of `path` with `permissions` (less the umask); ``Errno/exists`` when
    /// something is there already.
    package static func makeDirectory(_ path: String, permissions: mode_t) -> Errno? {
        nothingOrErrno { systemMakeDirectory(path, permissions) }
    }

    /// `fsync(2)` of the directory at `path`: a file created, renamed or removed in it stays so
    /// after a crash only once its directory is flushed too.
    package static func syncDirectory(_ path: String) -> Errno? {
        switch FileDescriptor.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) {
        case .failure(let failure): return failure
        case .success(let directory): return directory.sync()
        }
    }
}

/// The type of a file, in one place for every platform's `stat` layout.
extension stat {
    /// Whether this is a directory.
    package var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    /// Whether this is a regular file.
    package var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
    /// Whether this can be read only once, in order, with no length up front: a FIFO, a socket
    /// or a character device (a terminal, `/dev/stdin`).
    package var isReadOnce: Bool {
        let type = st_mode & S_IFMT
        return type == S_IFIFO || type == S_IFSOCK || type == S_IFCHR
    }
    /// Whether this is a symbolic link (only `lstat` says so).
    package var isSymbolicLink: Bool { (st_mode & S_IFMT) == S_IFLNK }

    /// What kind of file this is, in words for error messages: "FIFO", "socket", "character
    /// device", "block device", "symbolic link", "directory", "regular file".
    package var kind: String {
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

    /// The time of the last change of the bytes (which anyone who may write can set back).
    package var modificationTime: timespec {
        #if canImport(Darwin)
        st_mtimespec
        #else
        st_mtim
        #endif
    }

    /// The time of the last change of the bytes or the metadata (which only the kernel sets).
    package var statusChangeTime: timespec {
        #if canImport(Darwin)
        st_ctimespec
        #else
        st_ctim
        #endif
    }
}
