import Dispatch
import Foundation

/// Threads for blocking work (a request, a part upload, a host lookup), each job on a thread of
/// its own as with `Thread`, but reused: a thread that finished its job waits a few seconds for
/// the next one before it ends. A transfer that starts one request per chunk then pays for
/// threads once, not per chunk (creating and ending a thread cost about 2% of a TLS upload's CPU).
///
/// Jobs never wait for each other: with no idle thread, a new one starts.
package final class WorkerThreads: Sendable {
    /// The process's threads for blocking work.
    package static let shared = WorkerThreads(linger: 5)

    private final class Worker: Sendable {
        let wake = DispatchSemaphore(value: 0)
        /// Handed over by ``start(_:_:)`` under the pool's lock, taken by the worker after `wake`.
        let job = LockedValue<(name: String, work: @Sendable () -> Void)?>(nil)
    }

    private let linger: TimeInterval
    /// Threads waiting for a job, the most recently idle last (it is the first reused, so the
    /// others can time out when there is less work).
    private let idle = LockedValue<[Worker]>([])

    /// Threads that wait `linger` seconds for a new job before they end.
    package init(linger: TimeInterval) {
        self.linger = linger
    }

    /// How many threads wait for a job now.
    package var idleCount: Int { idle.withLock { $0.count } }

    /// Runs `work` on an idle thread of the pool, or on a new one, named `name` while it runs.
    package func start(_ name: String, _ work: @escaping @Sendable () -> Void) {
        let reused = idle.withLock { idle -> Worker? in
            guard let worker = idle.popLast() else { return nil }
            worker.job.withLock { $0 = (name, work) }
            return worker
        }
        if let reused {
            reused.wake.signal()
            return
        }
        let worker = Worker()
        worker.job.withLock { $0 = (name, work) }
        Thread { [self] in run(worker) }.start()
    }

    /// Names the calling thread as `ps`, `top` and debuggers show it: the first 15 bytes of
    /// `name` (the kernel's limit), cut at a character boundary. Through `/proc`, since Glibc's
    /// module has no `pthread_setname_np`; setting Foundation's `Thread.name` here was seen to
    /// leave the name a new thread inherits from the dispatch thread that started it.
    static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        var bytes = Array(name.utf8.prefix(15))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
        guard case .success(let comm) = FileDescriptor.open("/proc/thread-self/comm", O_WRONLY) else { return }
        _ = bytes.withUnsafeBytes { comm.writeAll($0) }
        #else
        Thread.current.name = name
        #endif
    }

    private func run(_ worker: Worker) {
        while let job = worker.job.withLock({ job in defer { job = nil }; return job }) {
            Self.nameCurrentThread(job.name)
            job.work()
            idle.withLock { $0.append(worker) }
            if worker.wake.wait(timeout: .now() + linger) == .timedOut {
                // Gone unless a job was handed over just now: then its signal is on its way.
                let leaving = idle.withLock { idle -> Bool in
                    guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
                    idle.remove(at: index)
                    return true
                }
                if leaving { return }
                worker.wake.wait()
            }
        }
    }
}
