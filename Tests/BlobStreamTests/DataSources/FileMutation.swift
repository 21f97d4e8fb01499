import BlobStream
import BlobTestSupport
import Foundation
import Glibc
import Testing

/// What the change-detection and special-file tests do to files behind a source's back: rewrite
/// bytes in place (same inode, same length), move timestamps explicitly so a coarse clock tick
/// can never hide a change, and run calls that used to block forever under a watchdog.
enum FileMutation {
    /// Overwrites the file at `path` from offset 0 with `bytes`, on the same inode and without
    /// truncating, the way an editor or `rsync --inplace` rewrites a file.
    static func rewriteInPlace(_ path: String, with bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TestSupportError("cannot open \(path) for writing: errno \(errno)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, $0.count - written, off_t(written)) }
            guard count > 0 else { throw TestSupportError("cannot write \(path): errno \(errno)") }
            written += count
        }
    }

    /// The file's status (following links).
    static func status(_ path: String) throws -> stat {
        var status = stat()
        guard stat(path, &status) == 0 else { throw TestSupportError("cannot stat \(path): errno \(errno)") }
        return status
    }

    /// Sets the file's access and modification times to `time`.
    static func setModificationTime(_ path: String, to time: timespec) throws {
        let times = [time, time]
        guard utimensat(AT_FDCWD, path, times, 0) == 0 else {
            throw TestSupportError("cannot set the times of \(path): errno \(errno)")
        }
    }

    /// Moves the file's modification time `seconds` past its current one, so the rewrite that
    /// came before is visible however coarse the file system's clock is.
    static func moveModificationTimeForward(_ path: String, seconds: Int = 10) throws {
        var time = try status(path).st_mtim
        time.tv_sec += seconds
        try setModificationTime(path, to: time)
    }

    /// Rewrites `path` in place with `bytes` and puts its modification time back to what it
    /// was, until the kernel gives the file a status-change time other than `opened`'s: a
    /// rewrite that only the change time can reveal. (The loop only waits out a coarse clock
    /// tick; it asserts nothing about time.)
    static func rewriteRestoringModificationTime(_ path: String, with bytes: [UInt8], opened: stat) throws {
        for _ in 0..<2_000 {
            try rewriteInPlace(path, with: bytes)
            try setModificationTime(path, to: opened.st_mtim)
            let now = try status(path)
            if now.st_ctim.tv_sec != opened.st_ctim.tv_sec || now.st_ctim.tv_nsec != opened.st_ctim.tv_nsec {
                #expect(now.st_mtim.tv_sec == opened.st_mtim.tv_sec && now.st_mtim.tv_nsec == opened.st_mtim.tv_nsec)
                return
            }
            usleep(1_000)
        }
        throw TestSupportError("the change time of \(path) never moved")
    }

    /// Runs `body` on another thread and waits at most `seconds` for it. A call that used to
    /// block forever then fails the test instead of hanging the suite: `release` is called to
    /// unblock it (for a FIFO, by opening its writing end) and the outcome is `nil`.
    static func withWatchdog<T: Sendable>(
        seconds: Double = 20,
        release: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable () -> T
    ) -> T? {
        let outcome = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            outcome.value = body()
            done.signal()
        }
        if done.wait(timeout: .now() + seconds) == .timedOut {
            Issue.record("the call was still blocked after \(seconds) s")
            release()
            _ = done.wait(timeout: .now() + seconds)
            return nil
        }
        return outcome.value
    }

    /// Opens the writing end of the FIFO at `path` without blocking and closes it at once,
    /// which releases a reader blocked in `open(2)` (it then reads the end of data).
    static func releaseFIFOReader(_ path: String) {
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if fd >= 0 { close(fd) }
    }

    /// Opens `source` synchronously and returns the outcome.
    static func openSource(_ source: any BlobDataSource) -> Result<BlobSourceDescription, BlobStreamError> {
        let outcome = Locked<Result<BlobSourceDescription, BlobStreamError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        source.open { result in
            outcome.value = result
            done.signal()
        }
        done.wait()
        return outcome.value!
    }

    /// Reads `count` bytes at `offset` with as many source reads as it takes.
    static func read(_ source: any BlobDataSource, count: Int, at offset: Int64) -> Result<[UInt8], BlobStreamError> {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + Int64(done)) {}
            }
            switch result {
            case .read(let n): done += n
            case .failed(let error): return .failure(error)
            case let other: return .failure(.sourceFailed(resource: source.resourceName, reason: "unexpected \(other)"))
            }
        }
        return .success(bytes)
    }
}
