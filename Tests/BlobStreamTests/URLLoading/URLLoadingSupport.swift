import BlobStream
import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sessions, tasks and fixtures for the ``BlobURLProtocol`` tests: real URLSessions, real
/// asset stores on disk, schemes registered under unique names so suites can run in parallel.
enum URLLoading {
    /// An ephemeral session with ``BlobURLProtocol`` installed.
    static func session(delegate: (any URLSessionDelegate)? = nil) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        BlobURLProtocol.install(into: configuration)
        return URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    /// A scheme no other test uses.
    static func uniqueScheme(_ prefix: String) -> String {
        prefix + "-" + UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(12)
    }

    /// Runs a completion-handler data task and returns what its handler got.
    static func completionTask(_ session: URLSession, _ request: URLRequest) async -> (Data?, URLResponse?, (any Error)?) {
        await withCheckedContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                continuation.resume(returning: (data, response, error))
            }.resume()
        }
    }

    /// The number of this process's descriptors open on `path`.
    static func openDescriptors(on path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
    }

    /// The process's thread count, from `/proc/self/status`.
    static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }
}

/// A directory asset store registered under its own scheme, with files of pseudo-random bytes.
final class URLAssetFixture: Sendable {
    let directory: String
    let store: DirectoryAssetStore
    let scheme: String

    init(scheme prefix: String = "asset-t") throws {
        let directory = try TempFiles.makeDirectory(prefix: "blob-urlprotocol")
        store = try TempFiles.removing(directory, ifThrows: { try DirectoryAssetStore(directory: directory) })
        self.directory = directory
        scheme = URLLoading.uniqueScheme(prefix)
        BlobURLRegistry.shared.register(assetStore: store, scheme: scheme)
    }

    /// Writes asset `identifier` with `size` pseudo-random bytes and returns its path.
    @discardableResult
    func add(_ identifier: String, size: Int, seed: UInt64 = 7) throws -> String {
        let path = try store.path(of: identifier)
        try TempFiles.writeRandomFile(atPath: path, size: size, seed: seed)
        return path
    }

    /// The asset URL of `identifier` (not percent-encoded: tests pass hostile ids on purpose).
    func url(_ identifier: String) -> URL {
        URL(string: "\(scheme)://?id=\(identifier)")!
    }

    func remove() {
        BlobURLRegistry.shared.unregister(scheme: scheme)
        TempFiles.remove(directory)
    }
}

/// A session delegate that records a data task: its response, every chunk (compared with the
/// expected bytes as they come, so a 256 MiB body is not kept), and anything that arrives after
/// completion.
final class RecordingDataDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private let expected: Data?
    private let keepsBytes: Bool
    private var bytes = Data()
    private var received = 0
    private var firstMismatch: Int?
    private var chunkCount = 0
    private var response: URLResponse?
    private var error: (any Error)?
    private var completed = false
    private var eventsAfterCompletion = 0
    private var waiter: CheckedContinuation<Void, Never>?
    /// Called (on the delegate queue) with the task after the first chunk.
    var onFirstChunk: (@Sendable (URLSessionTask) -> Void)?
    /// Called with each chunk's number, from 1.
    var onChunk: (@Sendable (URLSessionTask, Int) -> Void)?

    init(expected: Data? = nil, keepsBytes: Bool = true) {
        self.expected = expected
        self.keepsBytes = keepsBytes
    }

    struct Outcome {
        var bytes: Data
        var received: Int
        var firstMismatch: Int?
        var chunkCount: Int
        var response: HTTPURLResponse?
        var error: (any Error)?
        var eventsAfterCompletion: Int
    }

    var outcome: Outcome {
        lock.withLock {
            Outcome(
                bytes: bytes, received: received, firstMismatch: firstMismatch, chunkCount: chunkCount,
                response: response as? HTTPURLResponse, error: error, eventsAfterCompletion: eventsAfterCompletion)
        }
    }

    /// Waits until the task completed.
    func completion() async -> Outcome {
        await withCheckedContinuation { continuation in
            let done = lock.withLock {
                if completed { return true }
                waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return outcome
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock {
            if completed { eventsAfterCompletion += 1 }
            self.response = response
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let number = lock.withLock { () -> Int in
            if completed { eventsAfterCompletion += 1 }
            if let expected, firstMismatch == nil {
                let end = received + data.count
                if end > expected.count || expected[received..<end] != data { firstMismatch = received }
            }
            if keepsBytes { bytes.append(data) }
            received += data.count
            chunkCount += 1
            return chunkCount
        }
        if number == 1 { onFirstChunk?(dataTask) }
        onChunk?(dataTask, number)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let waiter = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if completed { eventsAfterCompletion += 1 }
            completed = true
            self.error = error
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume()
    }
}
