#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Synchronization

/// Streams what arrives on a pipe, a FIFO, a socket, a terminal or standard input: data with
/// no known length that can be read once, from its first byte to its last, and never again.
///
/// Reads never wait: a read finds out with a zero-timeout `poll` whether bytes (or the end)
/// are there, and otherwise answers ``BlobSourceReadResult/wouldBlock`` and watches the
/// descriptor from a background queue until it is readable. The data ends when every writer
/// has closed its end, which is why the description's length is `nil` and an end of data is
/// never an error here.
///
/// Because the bytes cannot be read twice, only the next offset may be read: a read at any
/// other offset (a seek, a resume, a second pass after a reopen) fails with
/// ``BlobStreamError/sourceFailed(resource:reason:)`` instead of returning other bytes.
public final class PipeDataSource: BlobDataSource {
    /// How errors name the input: its path, or `-` for standard input.
    public let resourceName: String
    private let origin: Origin
    private let state = Mutex(State())
    private let watchQueue = DispatchQueue(label: "BlobStream.PipeDataSource.watch")

    private enum Origin {
        /// A path opened at `open`; the descriptor is this source's own.
        case path(String)
        /// A descriptor the process inherited; it is read but never closed or reconfigured,
        /// since the shell (or the caller) shares its open file description.
        case descriptor(Int32)
    }

    private struct State {
        var fd: Int32 = -1
        var ownsDescriptor = false
        /// Both ends of the pipe that wakes the watcher when the source closes.
        var wake: (read: Int32, write: Int32) = (-1, -1)
        /// The offset of the next byte the descriptor will yield.
        var next: Int64 = 0
        var waiter: (@Sendable () -> Void)?
        var hasBeenOpened = false
        var reachedEnd = false
    }

    /// A source for the FIFO, socket or device at `path` (`/dev/stdin` too). Opening never waits
    /// for a writer: a FIFO without one simply has no bytes yet.
    public init(path: String) {
        resourceName = path
        origin = .path(path)
    }

    /// A source for the inherited descriptor `fileDescriptor`, named `name` in errors. The
    /// descriptor is neither closed nor made non-blocking, since other processes may share it.
    public init(fileDescriptor: Int32, name: String) {
        resourceName = name
        origin = .descriptor(fileDescriptor)
    }

    /// Standard input, named `-` as `sha256sum` names it.
    public static func standardInput() -> PipeDataSource {
        PipeDataSource(fileDescriptor: STDIN_FILENO, name: "-")
    }

    deinit {
        // The watcher holds only a weak reference, and may be the one releasing the last
        // strong one: waiting for its queue here could wait for itself.
        shutDown(waitingForWatcher: false)
    }

    /// 64 KiB, a Linux pipe's default capacity: one read can take all a writer has queued.
    public var preferredBlockSize: Int { 64 * 1024 }

    /// Opens the input; completes at once with an unknown length. Fails when it was opened
    /// before: its bytes are gone.
    public func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(openNow())
    }

    private func openNow() -> Result<BlobSourceDescription, BlobStreamError> {
        let alreadyOpened = state.withLock { state in
            defer { state.hasBeenOpened = true }
            return state.hasBeenOpened
        }
        if alreadyOpened {
            return .failure(.sourceFailed(resource: resourceName, reason: "a pipe can be read only once; it cannot be opened again"))
        }
        var fd: Int32
        var owns = false
        switch origin {
        case .descriptor(let descriptor):
            fd = descriptor
        case .path(let path):
            // O_NONBLOCK: a FIFO opened for reading would otherwise wait here for a writer.
            repeat { fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
            guard fd >= 0 else { return .failure(FileDataSource.openError(Errno(errno), operation: "open", path: path)) }
            owns = true
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let code = errno
            if owns { Self.closeDescriptor(fd) }
            return .failure(.system(resource: resourceName, operation: "pipe", offset: nil, errno: code))
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        state.withLock { state in
            state.fd = fd
            state.ownsDescriptor = owns
            state.wake = (ends[0], ends[1])
        }
        return .success(BlobSourceDescription(length: nil))
    }

    /// Reads what the input has at `offset`, which must be the next byte; answers
    /// ``BlobSourceReadResult/wouldBlock`` when nothing has arrived yet, ``BlobSourceReadResult/end``
    /// once every writer has closed.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let (fd, next, ended) = state.withLock { ($0.fd, $0.next, $0.reachedEnd) }
        guard fd >= 0 else { return .failed(.notOpen) }
        guard offset == next else {
            return .failed(.sourceFailed(
                resource: resourceName,
                reason: "a pipe is read once and in order: offset \(offset) was asked, but the next byte is at offset \(next)"))
        }
        if ended { return .end }
        guard Self.isReadable(fd) else {
            watch(fd, whenReadable)
            return .wouldBlock
        }
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 {
                state.withLock { $0.next += Int64(count) }
                return .read(count)
            }
            if count == 0 {
                state.withLock { $0.reachedEnd = true }
                return .end
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                watch(fd, whenReadable)
                return .wouldBlock
            case let code:
                return .failed(.system(resource: resourceName, operation: "read", offset: offset, errno: code))
            }
        }
    }

    /// Stops watching (dropping the pending `whenReadable` uncalled) and closes the descriptor
    /// when this source opened it. Idempotent.
    public func close() {
        shutDown(waitingForWatcher: true)
    }

    private func shutDown(waitingForWatcher: Bool) {
        let (fd, owns, wake) = state.withLock { state in
            defer {
                state.fd = -1
                state.wake = (-1, -1)
                state.waiter = nil
            }
            return (state.fd, state.ownsDescriptor, state.wake)
        }
        guard wake.write >= 0 else { return }
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
        // The watcher polls the descriptors on this queue: once it has drained, nothing uses them.
        if waitingForWatcher { watchQueue.sync {} }
        Self.closeDescriptor(wake.read)
        Self.closeDescriptor(wake.write)
        if owns { Self.closeDescriptor(fd) }
    }

    /// Keeps `whenReadable` and polls for `fd` in the background; calls it (off the watch
    /// queue, so it may call back into this source) once bytes, the end or an error are there.
    private func watch(_ fd: Int32, _ whenReadable: @escaping @Sendable () -> Void) {
        let wake = state.withLock { state in
            state.waiter = whenReadable
            return state.wake.read
        }
        watchQueue.async { [weak self] in
            var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while poll(&descriptors, 2, -1) < 0 && errno == EINTR {}
            guard descriptors[1].revents == 0, let self else { return }
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            if let waiter { DispatchQueue.global().async { waiter() } }
        }
    }

    /// Whether a read of `fd` would return at once: bytes, the end, or an error are pending.
    private static func isReadable(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, 0)
            if ready >= 0 { return ready > 0 }
            if errno != EINTR { return true }  // let the read report the error
        }
    }

    /// Closes a descriptor this source owns; not retried on EINTR, which could close a number
    /// reused meanwhile.
    private static func closeDescriptor(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #elseif canImport(Musl)
        _ = Musl.close(fd)
        #endif
    }
}
