import Dispatch

/// Runs tasks on dispatch's global queue instead of Swift's cooperative pool: for async work
/// that code on a thread of its own waits for (the pull of live data, a header provider asked
/// from a transfer's thread). A job that waits there for the cooperative pool (a producer fed
/// by a task on the pool) can still be stuck behind a blocked pool, but the task itself never
/// is: other code blocking every thread of the pool (two, on a small machine) cannot starve it.
package final class DispatchTaskExecutor: TaskExecutor {
    /// The one executor; it holds no state.
    package static let shared = DispatchTaskExecutor()

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue.global().async { job.runSynchronously(on: executor) }
    }
}
