#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
internal import SystemCalls

/// The descriptor side of ``PipeDataSource``: reads what arrives without ever waiting, and
/// watches the descriptor when nothing is there. It assumes what its ``ReadOnceDataSource``
/// ensures: one open, reads in order.
final class PipeReader: BlobDataSource {
    /// How errors name the input: its path, or `-` for standard input.
    let resourceName: String
    private let origin: Origin
    private let state = LockedValue(State())
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
        var waiter: (@Sendable () -> Void)?
        var reachedEnd = false
        /// Whether a read of the descriptor never waits (`O_NONBLOCK`): it is then tried at
        /// once, and EAGAIN says what a `poll` would have said.
        var readsWithoutWaiting = false
        /// How many reads asked `poll` first, for the tests.
        var readinessPolls = 0
    }

    /// How many reads asked `poll` whether the input was readable before reading it.
    var readinessPolls: Int { state.withLock { $0.readinessPolls } }

    /// A reader of the FIFO, socket or device at `path`, opened at `open`.
    init(path: String) {
        resourceName = path
        origin = .path(path)
    }

    /// A reader of the inherited descriptor `fileDescriptor`, named `name` in errors.
    init(fileDescriptor: Int32, name: String) {
        resourceName = name
        origin = .descriptor(fileDescriptor)
    }

    deinit {
        // The watcher holds only a weak reference, and may be the one releasing the last
        // strong one: waiting for its queue here could wait for itself.
        shutDown(waitingForWatcher: false)
    }

    /// 64 KiB, a Linux pipe's default capacity: one read can take all a writer has queued.
    var preferredBlockSize: Int { 64 * 1024 }

    /// Opens the input; completes at once with an unknown length.
    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        completion(openDescriptors())
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

    /// Reads what the input has next (at `offset`); answers ``BlobSourceReadResult/wouldBlock``
    /// when nothing has arrived yet, ``BlobSourceReadResult/end`` once every writer has closed.
    func read(
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int64,
        whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let (descriptor, ended, readsWithoutWaiting) = state.withLock {
            ($0.descriptor, $0.reachedEnd, $0.readsWithoutWaiting)
        }
        guard let descriptor else { return .failed(.notOpen) }
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
    func close() {
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
