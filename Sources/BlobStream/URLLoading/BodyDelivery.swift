import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How ``BlobURLProtocol`` hands a body to the URL Loading System, chosen per task.
///
/// FoundationNetworking (swift-corelibs-foundation, 6.3) treats a custom protocol's
/// `urlProtocol(_:didLoad:)` differently per task:
/// - a data task whose session delegate receives its events (created without a completion
///   handler) gets every chunk, in order, as `urlSession(_:dataTask:didReceive:)`;
/// - a task with a completion handler, and every `async` `data(from:)`/`data(for:)`, keeps only
///   the *last* chunk (`_ProtocolClient` stores each chunk instead of appending it);
/// - a download task's completion gets no file, and one with a download delegate traps.
///
/// So a blob streamed in blocks would silently reach the most common caller short. The
/// protocol streams only where it has seen that the session's delegate receives the chunks, and
/// otherwise delivers the whole body in one chunk: correct for every consumer, and for a
/// completion handler no more memory than the `Data` it receives anyway. Tests pin both
/// Foundation facts and this choice (`URLLoadingFoundationFactTests`, `BlobURLProtocolTaskKindTests`).
enum BodyDelivery {
    /// One `didLoad` with the whole body.
    case whole
    /// A `didLoad` per block; the operation queue is the one the chunks are delivered on, used
    /// to learn when the delegate has taken a block (back-pressure).
    case streamed(OperationQueue)
    /// The task cannot be served; fail it with this reason.
    case refused(String)

    /// The delivery for `task`.
    ///
    /// FoundationNetworking keeps what tells the cases apart (the task's registered behaviour)
    /// internal, so it is read by reflection (``TaskInternals``). This
    /// runs in `startLoading`, which FoundationNetworking calls on the task's work queue, the
    /// queue that owns that registry. Anything unexpected — another Foundation, a renamed
    /// field — gives ``whole``: more memory for a streaming consumer, never less data.
    static func choose(for task: URLSessionTask?) -> BodyDelivery {
        guard let task else { return .whole }
        if task is URLSessionDownloadTask {
            return .refused(
                "FoundationNetworking gives a custom protocol's download task no file (and traps with a download delegate); "
                    + "use a data task, or read the blob with BlobInputStream"
            )
        }
        guard task is URLSessionDataTask, !(task is URLSessionUploadTask),
            let session = TaskInternals.session(of: task),
            session.delegate is URLSessionDataDelegate,
            TaskInternals.behaviourName(of: task, in: session) == "callDelegate"
        else { return .whole }
        return .streamed(session.delegateQueue)
    }
}
