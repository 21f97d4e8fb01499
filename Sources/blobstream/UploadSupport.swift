import BlobStream
import BlobUpload
import Foundation

/// What `upload` and `put` share: turning an argument into an upload source, and running an
/// asynchronous upload from the synchronous command line.
enum UploadSupport {
    /// A URL when the argument has a scheme and names no existing file; a path otherwise.
    static func source(for argument: String) throws(CommandFailure) -> UploadSource {
        do {
            guard let url = try ArgumentURL.url(argument) else { return .file(path: argument) }
            return try .url(url)
        } catch {
            throw .runtime("\(argument): \(error)")
        }
    }

    /// Runs `work` on a task and waits for it. SIGINT cancels the task, so the upload stops
    /// cleanly and the exit status says so.
    static func run<Value: Sendable>(_ work: @escaping @Sendable () async throws(BlobUploadError) -> Value) -> Result<Value, BlobUploadError> {
        let outcome = Outcome<Value>()
        let task = Task {
            do throws(BlobUploadError) {
                outcome.set(.success(try await work()))
            } catch {
                outcome.set(.failure(error))
            }
        }
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        signal(SIGINT, SIG_IGN)
        interrupt.setEventHandler { task.cancel() }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        return outcome.wait()
    }
}

/// The result of a task, waited for by a thread.
private final class Outcome<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<Value, BlobUploadError>?

    func set(_ value: Result<Value, BlobUploadError>) {
        condition.withLock {
            result = value
            condition.broadcast()
        }
    }

    func wait() -> Result<Value, BlobUploadError> {
        condition.withLock {
            while result == nil { condition.wait() }
            return result!
        }
    }
}

/// Telling URLs from paths on the command line.
enum ArgumentURL {
    /// The URL `argument` names, when it starts with a scheme (RFC 3986: a letter, then letters,
    /// digits, `+`, `-` or `.`) and no file of that name exists; `nil` for a path.
    /// - Throws: ``BlobStreamError/unsupportedURL(url:reason:)`` for a scheme followed by
    ///   something that is not a URL.
    static func url(_ argument: String) throws(BlobStreamError) -> URL? {
        guard hasScheme(argument), !FileManager.default.fileExists(atPath: argument) else { return nil }
        guard let url = URL(string: argument) else {
            throw .unsupportedURL(url: argument, reason: "not a valid URL")
        }
        return url
    }

    private static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isASCII && scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
