import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What ``BlobURLProtocol`` needs to know about a task and FoundationNetworking keeps internal
/// (swift-corelibs-foundation 6.3), read by reflection: the task's session, its work queue and
/// the behaviour its session registered for it. Each answer is `nil` when the field is not
/// there (another Foundation), and every caller then falls back to what is safe.
/// `URLLoadingFoundationFactTests` and the delivery tests notice when that happens.
enum TaskInternals {
    /// The task's session (`URLSessionTask.session`).
    static func session(of task: URLSessionTask) -> URLSession? {
        child("session", of: task) as? URLSession
    }

    /// The serial queue the task runs `startLoading`, `stopLoading` and its own protocols'
    /// client calls on (`URLSessionTask.workQueue`, which targets the session's work queue).
    static func workQueue(of task: URLSessionTask) -> DispatchQueue? {
        child("workQueue", of: task) as? DispatchQueue
    }

    /// The name of the behaviour the session registered for the task (`callDelegate`,
    /// `dataCompletionHandler`, …). Read only on the task's work queue, which owns the registry.
    static func behaviourName(of task: URLSessionTask, in session: URLSession) -> String? {
        guard let registry = child("taskRegistry", of: session),
            let behaviours = child("behaviours", of: registry) as? [Int: Any],
            let behaviour = behaviours[task.taskIdentifier]
        else { return nil }
        return String(describing: behaviour)
    }

    /// The stored property `label` of `subject` or of one of its superclasses, unwrapped when
    /// it is an optional.
    private static func child(_ label: String, of subject: Any) -> Any? {
        var mirror: Mirror? = Mirror(reflecting: subject)
        while let current = mirror {
            if let value = current.children.first(where: { $0.label == label })?.value {
                let inner = Mirror(reflecting: value)
                guard inner.displayStyle == .optional else { return value }
                return inner.children.first?.value
            }
            mirror = current.superclassMirror
        }
        return nil
    }
}
