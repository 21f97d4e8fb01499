import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
internal import SystemCalls
#endif

/// The URLSession every ``URLSessionHTTPTransfer`` uses, and its delegate, which hands each
/// task's events to the transfer that started it.
///
/// One session for the process because on Linux all sessions share one work queue anyway, and a
/// session per data source would have to be invalidated on every close. Caching and cookies are
/// off: each response must come from the server, for the version checks to mean anything.
final class URLSessionTransferRouter: NSObject, URLSessionDataDelegate, Sendable {
    /// The router of ``session``.
    static let shared = URLSessionTransferRouter()

    /// The session, created on first use.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let queue = OperationQueue()
        queue.name = "BlobStream.HTTPDataSource.URLSession"
        queue.maxConcurrentOperationCount = 1
        return URLSession(configuration: configuration, delegate: shared, delegateQueue: queue)
    }()

    private let transfers = LockedValue<[Int: URLSessionHTTPTransfer]>([:])

    /// Routes the events of `task` to `transfer` until the task completes.
    func register(_ transfer: URLSessionHTTPTransfer, for task: URLSessionTask) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
    }

    private func transfer(for task: URLSessionTask) -> URLSessionHTTPTransfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let allowed = transfer(for: dataTask)?.didReceive(response) ?? false
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        transfer(for: dataTask)?.didReceive(data)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        transfer(for: task)?.redirect(status: response.statusCode, location: response.value(forHTTPHeaderField: "Location"))
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.didComplete(error: error)
    }
}
