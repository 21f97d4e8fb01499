import BlobStream
import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// A synchronous stream over an HTTP source as the body of a URLSession upload: URLSession reads
/// the body on its shared queue, so over the URLSession transport the read must fail fast
/// instead of waiting forever for a download that queue would have to deliver; over the socket
/// transport it simply works.
@Suite struct HTTPUploadCompositionTests {
    private struct Outcome: Sendable {
        var statusCode: Int?
        /// The task's error, described.
        var error: String?
    }

    /// PUTs `stream` (chunked: URLSession does not know a stream's length) to nginx's upload
    /// area and waits at most `timeout` seconds.
    private func upload(_ stream: InputStream, to name: String, timeout: TimeInterval = 20) async throws -> Outcome {
        var request = URLRequest(url: TestServers.uploadURL.appendingPathComponent(name))
        request.httpMethod = "PUT"
        request.httpBodyStream = stream
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Outcome?>(nil)
        URLSession.shared.dataTask(with: request) { _, response, error in
            result.value = Outcome(
                statusCode: (response as? HTTPURLResponse)?.statusCode,
                error: error.map { "\($0)" })
            done.signal()
        }.resume()
        return try await blocking {
            guard done.wait(timeout: .now() + timeout) == .success, let outcome = result.value else {
                throw TestSupportError("the upload neither finished nor failed within \(timeout) s: it hangs")
            }
            return outcome
        }
    }

    @Test func synchronousStreamOverURLSessionAsUploadBodyFailsFast() async throws {
        let blob = try ServedBlob(size: 1024 * 1024, seed: 21)
        defer { blob.remove() }
        let url = try blob.url()
        let source = HTTPDataSource(url: url, configuration: .init(transport: .urlSession))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        // Longer than the upload's 20 s: only detecting the deadlock can end this upload in time.
        stream.openTimeout = 120
        stream.readTimeout = 120
        let name = "http-source-composition-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let outcome = try await upload(stream, to: name)
        #expect(outcome.error != nil, "the upload must fail, not send a short or empty body (status \(outcome.statusCode ?? 0))")
        guard case .wouldDeadlock(let resource, let reason) = stream.blobError else {
            Issue.record("expected wouldDeadlock, got \(String(describing: stream.blobError))")
            return
        }
        #expect(resource == url.absoluteString)
        #expect(reason.contains("URLSession"))
        #expect(!FileManager.default.fileExists(atPath: TestServers.uploadRoot + "/" + name))
    }

    @Test func synchronousStreamOverSocketsAsUploadBodyWorks() async throws {
        let blob = try ServedBlob(size: 3 * 1024 * 1024 + 5, seed: 22)
        defer { blob.remove() }
        let stream = BlobInputStream(dataSource: HTTPDataSource(url: try blob.url()), mode: .synchronous)
        let name = "http-source-composition-\(UUID().uuidString).bin"
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let outcome = try await upload(stream, to: name)
        #expect(outcome.error == nil)
        #expect(outcome.statusCode == 201 || outcome.statusCode == 204)
        let uploaded = try Data(contentsOf: URL(fileURLWithPath: TestServers.uploadRoot + "/" + name))
        #expect(Array(uploaded) == blob.bytes)
    }

    @Test func waitingOffURLSessionsQueueIsSafe() {
        let url = TestServers.nginxURL.appendingPathComponent("any.bin")
        let source = HTTPDataSource(url: url, configuration: .init(transport: .urlSession))
        #expect(source.reasonWaitingWouldDeadlock() == nil)
        let onOwnQueue = DispatchQueue(label: "HTTPUploadCompositionTests").sync { source.reasonWaitingWouldDeadlock() }
        #expect(onOwnQueue == nil)
        let sockets = HTTPDataSource(url: url)
        let onURLSessionQueue = DispatchQueue(label: "MultiHandle.isolation").sync {
            (source.reasonWaitingWouldDeadlock(), sockets.reasonWaitingWouldDeadlock())
        }
        #expect(onURLSessionQueue.0 != nil, "a queue labelled like URLSession's is recognised")
        #expect(onURLSessionQueue.1 == nil, "the socket transport never needs URLSession's queue")
    }
}
