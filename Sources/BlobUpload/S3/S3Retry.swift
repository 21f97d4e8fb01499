import Foundation

/// Bounded exponential backoff for one S3 request: transient failures (throttling, 5xx,
/// `RequestTimeout`, dropped or refused connections) are tried again after
/// `retryDelay × 2ⁿ` (at most `maxRetryDelay`), up to `maxAttempts` in all; anything else
/// fails at once.
struct S3Retry {
    var options: S3UploadOptions
    var bucket: String
    var cancellation: S3Cancellation
    var events: S3EventSink

    /// Runs `attempt` until it succeeds, fails for good, or runs out of attempts.
    func run<T>(
        key: String, uploadID: String?, partNumber: Int?, retryingRefused: Bool = true,
        _ attempt: () throws(S3Error) -> T
    ) throws(S3Error) -> T {
        var number = 1
        while true {
            do {
                return try attempt()
            } catch {
                guard Self.isTransient(error, retryingRefused: retryingRefused) else { throw error }
                guard number < options.maxAttempts else {
                    throw .retriesExhausted(
                        bucket: bucket, key: key, uploadID: uploadID, partNumber: partNumber, attempts: number, lastError: error)
                }
                let delay = min(options.retryDelay * pow(2, Double(number - 1)), options.maxRetryDelay)
                number += 1
                events.send(.retrying(partNumber: partNumber, attempt: number, delay: delay, error: error))
                guard cancellation.sleep(delay) else { throw .cancelled(uploadID: uploadID) }
            }
        }
    }

    /// Whether asking again may help.
    static func isTransient(_ error: S3Error, retryingRefused: Bool) -> Bool {
        switch error {
        case .service(let failure):
            return failure.isTransient
        case .transfer(.network(_, _, _, let code)):
            // A name that does not resolve, a URL that cannot be used, a certificate refused:
            // the endpoint's mistake, as it is for tus; asking again cannot help.
            if BlobUploadError.permanentNetworkCodes.contains(code ?? 0) { return false }
            return retryingRefused || code != URLError.Code.cannotConnectToHost.rawValue
        default:
            return false
        }
    }
}

/// Delivers an upload's events one at a time, in order, from any worker thread.
final class S3EventSink: @unchecked Sendable {
    private let lock = NSLock()
    private let handler: @Sendable (S3UploadEvent) -> Void

    init(_ handler: @escaping @Sendable (S3UploadEvent) -> Void) {
        self.handler = handler
    }

    func send(_ event: S3UploadEvent) {
        lock.withLock { handler(event) }
    }
}
