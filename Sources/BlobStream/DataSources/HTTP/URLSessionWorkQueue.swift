#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch

/// Recognises the dispatch queues on which FoundationNetworking (swift-corelibs-foundation, the
/// URLSession of Linux) does all its work.
///
/// Every URLSession of a process targets one serial queue, `org.swift.URLSession.SharedQueue`;
/// each session works on `URLSession<n>`, each task on `org.swift.URLSessionTask.WorkQueue`, and
/// libcurl's callbacks — reading an upload's `httpBodyStream` among them — run on
/// `MultiHandle.isolation`. A block running on any of them holds the shared queue, so no
/// URLSession in the process can deliver a byte until it returns.
enum URLSessionWorkQueue {
    /// The exact labels, as found in swift-corelibs-foundation's URLSession sources.
    static let labels: Set<String> = [
        "org.swift.URLSession.SharedQueue",
        "org.swift.URLSessionTask.WorkQueue",
        "MultiHandle.isolation",
    ]

    /// The label of each session's work queue, `URLSession<identifier>`.
    static let sessionLabelPrefix = "URLSession<"

    /// The label of the queue the caller is running on, if it is one of URLSession's.
    static func current() -> String? {
        guard let label = currentQueueLabel() else { return nil }
        return labels.contains(label) || label.hasPrefix(sessionLabelPrefix) ? label : nil
    }

    /// The label of the dispatch queue running the caller, `nil` when none is known.
    static func currentQueueLabel() -> String? {
        #if canImport(Darwin)
        return String(cString: __dispatch_queue_get_label(nil))
        #else
        // Swift's Dispatch module marks dispatch_queue_get_label unavailable, and offers nothing
        // for "the current queue"; the C function is still exported by libdispatch.
        guard let function = getLabel, let label = function(nil) else { return nil }
        return String(cString: label)
        #endif
    }

    #if !canImport(Darwin)
    private typealias GetLabel = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?

    private static let getLabel: GetLabel? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "dispatch_queue_get_label") else { return nil }
        return unsafeBitCast(symbol, to: GetLabel.self)
    }()
    #endif
}
