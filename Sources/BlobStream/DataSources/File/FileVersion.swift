#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
internal import SystemCalls

/// What a file's status says about its version.
///
/// A version is the device, inode, size, modification time and status-change time. The change
/// time matters because the modification time can be set back (`touch -d`, `rsync --inplace
/// --times`, `cp -p`) while the change time cannot: the kernel sets it to "now" on every write,
/// on every `utimensat`, and also on metadata changes (permissions, links, extended
/// attributes), which are then reported as changes too, except a change of the link count
/// (the file was renamed over or removed: the open descriptor still reads the whole version it
/// opened). Timestamps only move when the kernel
/// stamps a change: on Linux since 6.13 a change that follows an `fstat` always gets a new
/// fine-grained stamp; older kernels stamp at a coarse clock tick, so a rewrite that keeps the
/// size within the tick of the open can go unseen. Nothing cheaper than reading the bytes again
/// can tell more.
extension stat {
    /// Device, inode, size, modification and status-change time: the version of the file, as
    /// ``BlobSourceDescription/version`` reports it. Equal tokens mean no change was stamped.
    var versionToken: String {
        "\(st_dev):\(st_ino):\(st_size):\(Self.text(modificationTime)):\(Self.text(statusChangeTime))"
    }

    /// What differs between this status and `opened`, the status of the version that was
    /// opened, in words for ``BlobStreamError/sourceChanged(resource:offset:reason:)``; `nil`
    /// when the version is the same.
    func change(since opened: stat) -> String? {
        var changes: [String] = []
        if st_dev != opened.st_dev || st_ino != opened.st_ino {
            changes.append("it is another file now (device \(st_dev), inode \(st_ino); was device \(opened.st_dev), inode \(opened.st_ino))")
        }
        if st_size != opened.st_size {
            changes.append("its size changed from \(opened.st_size) to \(st_size) bytes")
        }
        let (modified, wasModified) = (modificationTime, opened.modificationTime)
        if modified.tv_sec != wasModified.tv_sec || modified.tv_nsec != wasModified.tv_nsec {
            changes.append("its modification time changed from \(Self.text(wasModified)) to \(Self.text(modified))")
        } else if st_nlink == opened.st_nlink {
            // A new link count explains a new change time: the file was renamed over or
            // unlinked, and the descriptor still reads the whole version that was opened.
            let (changed, wasChanged) = (statusChangeTime, opened.statusChangeTime)
            if changed.tv_sec != wasChanged.tv_sec || changed.tv_nsec != wasChanged.tv_nsec {
                changes.append(
                    "its status change time moved from \(Self.text(wasChanged)) to \(Self.text(changed)) with the modification "
                        + "time unchanged (rewritten with its modification time put back, or its permissions or links changed)"
                )
            }
        }
        return changes.isEmpty ? nil : changes.joined(separator: "; ")
    }

    /// `seconds.nanoseconds`, nanoseconds in nine digits, for tokens and messages.
    private static func text(_ time: timespec) -> String {
        let nanoseconds = String(time.tv_nsec)
        return "\(time.tv_sec)." + String(repeating: "0", count: max(0, 9 - nanoseconds.count)) + nanoseconds
    }
}
