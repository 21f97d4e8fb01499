#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
internal import SystemCalls
import Synchronization

/// Streams what arrives on a pipe, a FIFO, a socket, a terminal or standard input: data with
/// no known length that can be read once, from its first byte to its last, and never again.
///
/// Reads never wait: a non-blocking descriptor (one this source opened, or an inherited one
/// with `O_NONBLOCK`) is read at once, and EAGAIN means nothing is there yet; an inherited
/// blocking one is first asked with a zero-timeout `poll` whether bytes (or the end) are there.
/// Either way, when nothing is there, a read answers ``BlobSourceReadResult/wouldBlock`` and watches the
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
        /// The input; closes (when this source opened it) once neither the source, nor a read,
        /// nor the watcher holds it any more.
        var descriptor: FileDescriptor?
        /// Both ends of the pipe that wakes the watcher when the source closes.
        var wake: (read: FileDescriptor, write: FileDescriptor)?
        /// The offset of the next byte the descriptor will yield.
        var next: Int64 = 0
        var waiter: (@Sendable () -> Void)?
        var hasBeenOpened = false
        var reachedEnd = false
        /// Whether a read of the descriptor never waits (`O_NONBLOCK`): it is then tried at
        /// once, and EAGAIN says what a `poll` would have said.
        var readsWithoutWaiting = false
        /// How many reads asked `poll` first, for the tests.
        var readinessPolls = 0
    }

    /// How many reads asked `poll` whether the input was readable before reading it.
    var readinessPolls: Int { state.withLock { $0.readinessPolls } }

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
        let result = openDescriptors()
        // An open that failed read nothing: a later one may try again, and must say why it
        // fails rather than that the pipe was opened before.
        if case .failure = result { state.withLock { $0.hasBeenOpened = false } }
        return result
    }

    private func openDescriptors() -> Result<BlobSourceDescription, BlobStreamError> {
        let descriptor: FileDescriptor
        switch origin {
        case .descriptor(let inherited):
            descriptor = FileDescriptor(borrowing: inherited)
        case .path(let path):
            // O_NONBLOCK: a FIFO opened for reading would otherwise wait here for a writer.
            switch FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) {
            case .success(let opened): descriptor = opened
            case .failure(let error): return .failure(FileDataSource.openError(error, operation: "open", path: path))
            }
        }
        switch FileDescriptor.pipe() {
        case .success(let wake):
            let nonBlocking = descriptor.isNonBlocking == true
            state.withLock { state in
                state.descriptor = descriptor
                state.wake = wake
                state.readsWithoutWaiting = nonBlocking
            }
        case .failure(let error):
            return .failure(.system(resource: resourceName, operation: "pipe", offset: nil, errno: error.rawValue))
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
        let (descriptor, next, ended, readsWithoutWaiting) = state.withLock {
            ($0.descriptor, $0.next, $0.reachedEnd, $0.readsWithoutWaiting)
        }
        guard let descriptor else { return .failed(.notOpen) }
        guard offset == next else {
            return .failed(.sourceFailed(
                resource: resourceName,
                reason: "a pipe is read once and in order: offset \(offset) was asked, but the next byte is at offset \(next)"))
        }
        if ended { return .end }
        // An inherited descriptor may block: ask first whether a read would wait. A failed poll
        // counts as readable: the read then reports the error.
        if !readsWithoutWaiting {
            state.withLock { $0.readinessPolls += 1 }
            if case .success(let readiness) = descriptor.poll(for: .readable, milliseconds: 0), !readiness.isReady {
                watch(descriptor, whenReadable)
                return .wouldBlock
            }
        }
        switch descriptor.read(into: buffer) {
        case .success(0) where readsWithoutWaiting && !hasHungUp(descriptor):
            // A FIFO that no writer has opened yet reads as its end; only a hang-up is one.
            watch(descriptor, whenReadable)
            return .wouldBlock
        case .success(0):
            state.withLock { $0.reachedEnd = true }
            return .end
        case .success(let count):
            state.withLock { $0.next += Int64(count) }
            return .read(count)
        case .failure(let error) where error.isWouldBlock:
            watch(descriptor, whenReadable)
            return .wouldBlock
        case .failure(let error):
            return .failed(.system(resource: resourceName, operation: "read", offset: offset, errno: error.rawValue))
        }
    }

    /// Whether `descriptor`'s writers have all gone (or it failed), as `poll` tells: unlike a
    /// `read` of 0, which a FIFO without a writer yet gives as well.
    private func hasHungUp(_ descriptor: FileDescriptor) -> Bool {
        state.withLock { $0.readinessPolls += 1 }
        guard case .success(let readiness) = descriptor.poll(for: .readable, milliseconds: 0) else { return true }
        return readiness.isReady
    }

    /// Stops watching (dropping the pending `whenReadable` uncalled) and closes the descriptor
    /// when this source opened it. Idempotent.
    public func close() {
        shutDown(waitingForWatcher: true)
    }

    private func shutDown(waitingForWatcher: Bool) {
        let wake = state.withLock { state in
            defer {
                state.descriptor = nil
                state.wake = nil
                state.waiter = nil
            }
            return state.wake
        }
        guard let wake else { return }
        wake.write.wakeUp()
        // The watcher polls on this queue, holding the descriptors: once it has drained, this
        // was their last holder (but for a read still under way), so they close as this returns.
        // From `deinit` the watcher is not waited for; they close when it lets go of them.
        if waitingForWatcher { watchQueue.sync {} }
    }

    /// Keeps `whenReadable` and polls `descriptor` in the background; calls it (off the watch
    /// queue, so it may call back into this source) once bytes, the end or an error are there.
    private func watch(_ descriptor: FileDescriptor, _ whenReadable: @escaping @Sendable () -> Void) {
        let wake = state.withLock { state in
            state.waiter = whenReadable
            return state.wake?.read
        }
        guard let wake else { return }
        watchQueue.async { [weak self] in
            // A failed poll calls back too: the next read reports the error.
            let readiness = descriptor.poll(for: .readable, orWakeUpFrom: wake, milliseconds: -1)
            if case .success(let readiness) = readiness, readiness.isWokenUp { return }
            guard let self else { return }
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            if let waiter { DispatchQueue.global().async { waiter() } }
        }
    }
}
