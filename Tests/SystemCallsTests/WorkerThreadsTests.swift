import Dispatch
import Foundation
import SystemCalls
import Testing

/// ``WorkerThreads``: jobs never wait for each other, a finished job's thread takes the next
/// one, and an idle thread ends after its linger time.
@Suite struct WorkerThreadsTests {
    /// The kernel's id of the calling thread.
    private static func threadID() -> Int32 {
        // "/proc/thread-self" names "<pid>/task/<tid>".
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? -1
    }

    @Test func jobsThatWaitForEachOtherAllRun() {
        let pool = WorkerThreads(linger: 5)
        let count = 8
        // Each job waits until every job has started: with a bounded pool this would deadlock.
        let started = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        for _ in 0..<count {
            finished.enter()
            pool.start("job") {
                started.signal()
                go.wait()
                finished.leave()
            }
        }
        for _ in 0..<count { #expect(started.wait(timeout: .now() + 10) == .success) }
        for _ in 0..<count { go.signal() }
        #expect(finished.wait(timeout: .now() + 10) == .success)
    }

    @Test func aFinishedJobsThreadTakesTheNextJob() {
        let pool = WorkerThreads(linger: 5)
        let threads = LockedValue<[Int32]>([])
        for _ in 0..<3 {
            let done = DispatchSemaphore(value: 0)
            pool.start("job") {
                threads.withLock { $0.append(Self.threadID()) }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            // The thread records itself as idle right after its job.
            #expect(Self.eventually { pool.idleCount == 1 })
        }
        let seen = threads.withLock { $0 }
        #expect(seen.count == 3 && !seen.contains(-1))
        #expect(Set(seen).count == 1, "each job ran on a new thread: \(seen)")
    }

    @Test func anIdleThreadEndsAfterItsLingerTime() {
        let pool = WorkerThreads(linger: 0.1)
        let threads = LockedValue<[Int32]>([])
        for _ in 0..<2 {
            let done = DispatchSemaphore(value: 0)
            pool.start("job") {
                threads.withLock { $0.append(Self.threadID()) }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 10) == .success)
            // Gone from the process once its linger time is over.
            let thread = threads.withLock { $0.last! }
            #expect(Self.eventually { !FileManager.default.fileExists(atPath: "/proc/self/task/\(thread)") })
            #expect(pool.idleCount == 0)
        }
        let seen = threads.withLock { $0 }
        #expect(seen.count == 2 && !seen.contains(-1) && seen[0] != seen[1])
    }

    /// Whether `condition` holds within 30 s (a bound for a loaded machine, not a target).
    private static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 30)
        while !condition() {
            if Date() > deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    @Test func theJobRunsUnderItsName() {
        let pool = WorkerThreads(linger: 5)
        let name = LockedValue<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        pool.start("BlobTest worker thread") {
            let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            name.withLock { $0 = comm?.trimmingCharacters(in: .newlines) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        // The kernel keeps 15 bytes of a thread's name.
        #expect(name.withLock { $0 } == "BlobTest worker")
    }
}
