import Foundation
import Glibc
import SystemCalls

/// The one directory per test process, per parent, that holds every scratch directory and file
/// ``TempFiles`` makes there: `<parent>/blobstream-tests.<pid>`.
///
/// A test removes what it made with a `defer` right after making it, but a `defer` does not run
/// when the process traps, is killed (a timeout, Ctrl-C) or keeps a fixture for its whole life
/// (a `static let`). Such leftovers used to pile up in /tmp by the hundreds of megabytes; here
/// they stay in this process's directory, which goes when the process exits normally, and is
/// swept by the next test process to make scratch space in the same parent once no process
/// with that pid is running (all test processes share the machine's pid namespace).
public enum ScratchSpace {
    /// The name every process directory starts with, followed by the process id.
    public static let directoryPrefix = "blobstream-tests."

    /// The process directories made so far, removed at exit.
    private static let made = LockedValue<[String]>([])

    /// This process's directory inside `parent` (created, mode 0755 so that nginx's workers can
    /// serve what lies under it, on first use; leftovers of dead test processes in `parent` are
    /// removed then).
    public static func directory(in parent: String = NSTemporaryDirectory()) throws -> String {
        let parent = parent.count > 1 && parent.hasSuffix("/") ? String(parent.dropLast()) : parent
        let path = parent + "/" + directoryPrefix + String(getpid())
        try made.withLock { made in
            guard !made.contains(path) else { return }
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            removeLeftovers(in: parent)
            // An existing one is a dead process's that had the same pid: it is taken over.
            guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
                throw TestSupportError("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            chmod(path, 0o755)
            if made.isEmpty {
                atexit { ScratchSpace.removeAll() }
            }
            made.append(path)
        }
        return path
    }

    /// Removes the process directories in `parent` whose process is gone.
    static func removeLeftovers(in parent: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
        for name in names where name.hasPrefix(directoryPrefix) {
            guard let pid = pid_t(name.dropFirst(directoryPrefix.count)), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                TempFiles.remove(parent + "/" + name)
            }
        }
    }

    /// Removes every process directory this process made: what no `defer` removed.
    static func removeAll() {
        made.withLock { $0 }.forEach(TempFiles.remove)
    }
}
