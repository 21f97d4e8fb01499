import Dispatch
internal import SystemCalls

/// The pulling side of ``AsyncSequenceDataSource``: hands the sequence's elements to reads, one
/// element at a time. It assumes what its ``ReadOnceDataSource`` ensures: one open, reads in
/// order.
///
/// The task runs on dispatch's threads (``PullExecutor``), not on Swift's cooperative pool: a
/// read of this source may block a thread that the pool's own threads wait for — URLSession's
/// one work queue, which a streamed PUT's body read holds, and which every URLSession call
/// made from the pool waits for — and the element it waits for must still be pulled then.
final class AsyncSequenceReader<Chunks: AsyncSequence & Sendable>: BlobDataSource
where Chunks.Element: Collection & Sendable, Chunks.Element.Element == UInt8 {
    let resourceName: String
    private let chunks: Chunks
    private let channel = Channel()

    /// What the reads and the pulling task share.
    private final class Channel: Sendable {
        let state = LockedValue(State())

        struct State {
            var opened = false
            var closed = false
            /// The element being read, and how many of its bytes were read.
            var pending: Chunks.Element?
            var consumed = 0
            /// The offset of the next byte a read gets.
            var next: Int64 = 0
            var ended = false
            var failure: (error: any Error, offset: Int64)?
            var waiter: (@Sendable () -> Void)?
            /// The pulling task, parked until a read wants the next element.
            var demand: CheckedContinuation<Bool, Never>?
            /// A read found nothing to read: the next element is wanted, until it is delivered.
            /// Reads that find nothing again meanwhile (a stream may retry after a stale wake-up)
            /// want the same element, never one more.
            var wantsMore = false
            var task: Task<Void, Never>?
        }
    }

    /// A source named `name` that reads `chunks` once.
    init(name: String, chunks: Chunks) {
        resourceName = name
        self.chunks = chunks
    }

    deinit {
        close()
    }

    /// What the producer threw, and after how many bytes; `nil` while it has not failed.
    var producerFailure: (error: any Error, offset: Int64)? {
        channel.state.withLock { $0.failure }
    }

    /// Starts the pulling task (which pulls nothing until the first read); unknown length and
    /// no version.
    func open(completion: @escaping @Sendable (Result<BlobSourceDescription, BlobStreamError>) -> Void) {
        let channel = self.channel
        let chunks = self.chunks
        channel.state.withLock { $0.opened = true }
        let task = Task(executorPreference: PullExecutor.shared) { await Self.pull(chunks, into: channel) }
        let cancelNow = channel.state.withLock { state in
            state.task = task
            return state.closed
        }
        if cancelNow { task.cancel() }
        completion(.success(BlobSourceDescription(length: nil)))
    }

    /// Copies what the current element still holds; asks the task for the next element and
    /// answers ``BlobSourceReadResult/wouldBlock`` when it holds nothing more.
    func read(
        into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, whenReadable: @escaping @Sendable () -> Void
    ) -> BlobSourceReadResult {
        let name = resourceName
        let wanted = buffer.count
        let destination = Destination(buffer)
        let step = channel.state.withLock { state -> ReadStep in
            guard state.opened, !state.closed else { return .answer(.failed(.notOpen)) }
            if let pending = state.pending {
                let start = pending.index(pending.startIndex, offsetBy: state.consumed)
                let end = pending.index(start, offsetBy: wanted, limitedBy: pending.endIndex) ?? pending.endIndex
                let count = pending.distance(from: start, to: end)
                destination.copyBytes(from: pending[start..<end], count: count)
                state.next += Int64(count)
                state.consumed += count
                if end == pending.endIndex {
                    state.pending = nil
                    state.consumed = 0
                }
                return .answer(.read(count))
            }
            if let failure = state.failure {
                return .answer(.failed(.sourceFailed(
                    resource: name, reason: "the producer failed after \(failure.offset) bytes: \(failure.error)")))
            }
            if state.ended { return .answer(.end) }
            state.waiter = whenReadable
            state.wantsMore = true
            defer { state.demand = nil }
            return .wait(state.demand)
        }
        switch step {
        case .answer(let result):
            return result
        case .wait(let parked):
            parked?.resume(returning: true)
            return .wouldBlock
        }
    }

    /// The read's buffer, written under the lock while the call lasts: the stream owns it
    /// and waits for the call.
    private struct Destination: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
        init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

        func copyBytes<Bytes: Collection>(from bytes: Bytes, count: Int) where Bytes.Element == UInt8 {
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]).copyBytes(from: bytes)
        }
    }

    /// What a read does once it let go of the lock.
    private enum ReadStep: Sendable {
        case answer(BlobSourceReadResult)
        case wait(CheckedContinuation<Bool, Never>?)
    }

    /// Cancels the pulling task and drops the element it holds. Idempotent; the source cannot
    /// be opened again.
    func close() {
        let (task, parked) = channel.state.withLock { state in
            state.closed = true
            state.pending = nil
            state.consumed = 0
            state.waiter = nil
            defer { state.demand = nil }
            return (state.task, state.demand)
        }
        parked?.resume(returning: false)
        task?.cancel()
    }

    /// The pulling task: waits for a read to want more, pulls one element, hands it over;
    /// until the sequence ends, fails, or the source closes.
    private static func pull(_ chunks: Chunks, into channel: Channel) async {
        var iterator = chunks.makeAsyncIterator()
        while await wanted(channel) {
            let element: Chunks.Element?
            do {
                element = try await iterator.next()
            } catch {
                deliver(to: channel) { state in
                    state.failure = (error, state.next)
                    return true
                }
                return
            }
            guard let element else {
                deliver(to: channel) { state in
                    state.ended = true
                    return true
                }
                return
            }
            deliver(to: channel) { state in
                // Nothing to read: the read still waits, and the next element is still wanted.
                guard !element.isEmpty else { return false }
                state.wantsMore = false
                state.pending = element
                state.consumed = 0
                return true
            }
        }
    }

    /// Parks the task until a read wants the next element (`true`) or the source closes (`false`).
    private static func wanted(_ channel: Channel) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = channel.state.withLock { state -> Bool? in
                if state.closed { return false }
                if state.wantsMore { return true }
                state.demand = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Changes the state with what the task pulled and wakes the waiting read, unless the
    /// source closed meanwhile (what was pulled is dropped then) or `change` says the read
    /// must wait on (it returns `false`).
    private static func deliver(to channel: Channel, _ change: (inout Channel.State) -> Bool) {
        let waiter = channel.state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.closed, change(&state) else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?()
    }
}

/// Runs the tasks that pull live data on dispatch's global queue. A job that waits there for
/// the cooperative pool (a producer fed by a task on the pool) can still be stuck behind a
/// blocked pool, but the pulling itself never is.
/// Also the executor of a header provider that an HTTP transfer's thread waits for
/// (``waitForAsync(on:_:)``).
final class PullExecutor: TaskExecutor {
    static let shared = PullExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }
}
