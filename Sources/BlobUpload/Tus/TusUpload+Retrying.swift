import BlobStream
import Foundation
internal import HTTP1

/// How a ``TusUpload`` tries again: which failures may pass, how many in a row it takes, and
/// how long it waits between tries.
extension TusUpload {
    func retrying<T>(_ operation: () async throws(BlobUploadError) -> T) async throws(BlobUploadError) -> T {
        while true {
            do {
                return try await operation()
            } catch {
                try await countFailure(error, waiting: true)
            }
        }
    }

    /// Counts a failure against the budget and waits before the next try; rethrows failures
    /// that another try cannot fix, and the last one when the budget is spent.
    func countFailure(_ error: BlobUploadError, waiting: Bool) async throws(BlobUploadError) {
        guard Self.isTransient(error) else { throw error }
        failures += 1
        retries += 1
        if failures >= options.retry.maxAttempts {
            throw .retriesExhausted(
                url: (uploadURL ?? client.endpoint).absoluteString, offset: offset,
                attempts: failures, lastError: error)
        }
        let delay = waiting ? options.retry.delay(forAttempt: failures) : 0
        emit(.retrying(attempt: failures, delay: delay, error: error))
        if delay > 0 {
            do {
                try await Task.sleep(nanoseconds: Self.nanoseconds(forDelay: delay))
            } catch {
                throw .cancelled
            }
        }
    }

    /// `delay` seconds for `Task.sleep`, within 0 and a day: a policy's delay can be anything a
    /// `Double` holds (infinite, not a number), and converting those traps.
    static func nanoseconds(forDelay delay: TimeInterval) -> UInt64 {
        guard delay > 0 else { return 0 }
        return UInt64(min(delay, 86_400) * 1_000_000_000)
    }

    /// Failures that may pass: the connection, a restarting or busy server, a lost race.
    static func isTransient(_ error: BlobUploadError) -> Bool {
        switch error {
        case .network(_, _, _, let code):
            return !BlobUploadError.permanentNetworkCodes.contains(code ?? 0)
        case .httpStatus(_, _, let status, _):
            // tus adds a lost race (409), a locked upload (423) and a checksum mismatch (460).
            return HTTPStatusRetry.asksAgainLater(status) || [409, 423, 460].contains(status)
        default:
            return false
        }
    }
}
