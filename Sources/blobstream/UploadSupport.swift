import BlobStream
import BlobUpload
import Foundation

/// What `upload`, `put` and `s3` share: running an asynchronous upload from the synchronous
/// command line, stoppable by a signal or by the command itself, and the upload's source.
enum UploadSupport {
    /// How a run ended.
    struct Outcome<Value: Sendable, Failure: Error> {
        /// The upload's result.
        var result: Result<Value, Failure>
        /// The signal that stopped it, if one did.
        var interruption: Interruption
        /// The error the command stopped it for with ``Control/stop(because:)``, if it did.
        var stopReason: Failure?
    }

    /// Lets the command stop the upload it runs, giving the error to report instead.
    final class Control<Failure: Error>: @unchecked Sendable {
        private let lock = NSLock()
        private var task: Task<Void, Never>?
        private var reason: Failure?
        private var cancelled = false

        /// Remembers the task to cancel; cancels it at once if that was asked for already.
        fileprivate func attach(_ task: Task<Void, Never>) {
            let cancelNow = lock.withLock { () -> Bool in
                self.task = task
                return cancelled
            }
            if cancelNow { task.cancel() }
        }

        /// Cancels the upload; the command reports `error` rather than an interruption.
        func stop(because error: Failure) {
            lock.withLock { if reason == nil { reason = error } }
            cancel()
        }

        /// Cancels the upload, now or as soon as it starts.
        fileprivate func cancel() {
            let task = lock.withLock { () -> Task<Void, Never>? in
                cancelled = true
                return self.task
            }
            task?.cancel()
        }

        fileprivate var stopReason: Failure? { lock.withLock { reason } }
    }

    /// Runs `work` on a task and waits for it. SIGINT and SIGTERM cancel the task, so the
    /// upload stops cleanly and the command can say what is left and exit accordingly.
    static func run<Value: Sendable, Failure: Error>(
        control: Control<Failure> = Control(),
        _ work: @escaping @Sendable () async throws(Failure) -> Value
    ) -> Outcome<Value, Failure> {
        // Signals are caught before the work starts, so none can kill it halfway.
        let interruption = Interruption { control.cancel() }
        defer { interruption.end() }
        let box = Handoff<Result<Value, Failure>>()
        let task = Task {
            do throws(Failure) {
                box.set(.success(try await work()))
            } catch {
                box.set(.failure(error))
            }
        }
        control.attach(task)
        let result = box.wait()
        return Outcome(result: result, interruption: interruption, stopReason: control.stopReason)
    }

    /// The upload source for the command-line input `argument`: a file, any registered URL,
    /// or a pipe (standard input, a FIFO, a device), which is live data: read once, in order,
    /// of unknown length. `refusingPipe` is why a command cannot take a pipe here, if it cannot.
    static func source(for argument: String, refusingPipe reason: String? = nil) throws(CommandFailure) -> UploadSource {
        let input: InputArgument
        do throws(BlobStreamError) {
            input = try InputArgument(argument)
        } catch {
            throw .runtime(ErrorPresenter.message(error, subject: argument))
        }
        if input.isPipe, let reason {
            throw .usage("\(argument == "-" ? "standard input" : argument) \(reason)")
        }
        switch input {
        case .standardInput:
            return .live(name: argument, dataSource: PipeDataSource.standardInput())
        case .pipe(let path):
            return .live(name: path, dataSource: PipeDataSource(path: path))
        case .file(let path):
            return .file(path: path)
        case .url(let url):
            do throws(BlobUploadError) {
                return try .url(url)
            } catch {
                throw .runtime(ErrorPresenter.message(error, subject: argument))
            }
        }
    }
}
