import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SystemCalls
import Testing

/// Each test runs once per transport: the package's own client (`http:`) and URLSession.
@Suite struct StreamedUploadTests {
    static let transports: [Transport] = [.automatic, .urlSession]

    @Test(arguments: Self.transports) func putsABlobInputStreamByteIdentical(transport: Transport) async throws {
        try TestServers.requireNginx()
        let size = 3 * 1024 * 1024 + 17
        let path = try makeRandomFile(size: size)
        defer { TempFiles.remove(path) }
        let name = "put-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let seen = EventLog<TransferProgress>()
        let response = try await StreamedUploader(transport: transport).upload(
            BlobInputStream(fileAtPath: path), to: TestServers.uploadURL.appendingPathComponent(name),
            expectedLength: Int64(size)) { seen.append($0) }
        #expect((200..<300).contains(response.statusCode))
        #expect(response.bytesSent == Int64(size))
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path))
        #expect(seen.all.last == TransferProgress(completedBytes: Int64(size), totalBytes: Int64(size)))
    }

    @Test(arguments: Self.transports) func putsAPseudoFileOfSizeZeroWhole(transport: Transport) async throws {
        // /proc/version announces 0 bytes but has some: an upload of "its size" would store an
        // empty object (README, "Sizes that lie").
        try TestServers.requireNginx()
        let name = "put-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let expected = try Data(contentsOf: URL(fileURLWithPath: "/proc/version"))
        try #require(!expected.isEmpty)
        let response = try await StreamedUploader(transport: transport).upload(
            BlobInputStream(fileAtPath: "/proc/version"), to: TestServers.uploadURL.appendingPathComponent(name))
        #expect((200..<300).contains(response.statusCode))
        #expect(response.bytesSent == Int64(expected.count))
        #expect(try Data(contentsOf: URL(fileURLWithPath: stored)) == expected)
    }

    @Test(arguments: Self.transports) func refusesA307ThatWouldResendTheBody(transport: Transport) async throws {
        try TestServers.requireNginx()
        let path = try makeRandomFile(size: 256 * 1024)
        defer { TempFiles.remove(path) }
        let name = "redirected-\(UUID().uuidString).bin"
        let target = TestServers.redirectPutURL.appendingPathComponent(name)
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(BlobInputStream(fileAtPath: path), to: target)
        } throws: { error in
            guard case .redirectRefused(let method, let url, let status, let location)? = error as? BlobUploadError else {
                return false
            }
            return method == "PUT" && url == target.absoluteString && status == 307
                && location?.hasSuffix("/upload/\(name)") == true
        }
        // Nothing was written at the redirect's target: the empty re-send never happened.
        #expect(!FileManager.default.fileExists(atPath: TestServers.uploadRoot + "/" + name))
    }

    @Test(arguments: Self.transports) func reportsAMissingFileAsASourceError(transport: Transport) async throws {
        try TestServers.requireNginx()
        let target = TestServers.uploadURL.appendingPathComponent("missing-\(UUID().uuidString).bin")
        await #expect(throws: BlobUploadError.source(.notFound(resource: "/nonexistent/blob.bin"))) {
            _ = try await StreamedUploader(transport: transport).upload(BlobInputStream(fileAtPath: "/nonexistent/blob.bin"), to: target)
        }
    }

    @Test(arguments: Self.transports) func nonSuccessStatusIsATypedError(transport: Transport) async throws {
        try TestServers.requireNginx()
        // nginx allows PUT only under /upload/.
        let target = TestServers.nginxURL.appendingPathComponent("not-writable/blob.bin")
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(InputStream(data: Data("hello".utf8)), to: target)
        } throws: { error in
            guard case .httpStatus("PUT", target.absoluteString, let status, _)? = error as? BlobUploadError else {
                return false
            }
            return status == 405
        }
    }

    @Test(arguments: Self.transports) func cancellingUnblocksAStalledBodyRead(transport: Transport) async throws {
        try TestServers.requireNginx()
        let name = "stalled-\(UUID().uuidString).bin"
        let target = TestServers.uploadURL.appendingPathComponent(name)
        defer { TempFiles.remove(TestServers.uploadRoot + "/" + name) }
        let source = ScriptedDataSource(bytes: [UInt8](repeating: 7, count: 1 << 20))
        source.stallReads = true
        // The stalled read holds URLSession's queue, shared by the whole process, until the
        // cancellation closes the stream — or, should that fail, until this time-out. A loaded
        // suite run stretches every wait here by tens of seconds, so the time-out is long and
        // the bound below is half of it: only a read the cancellation did not end gets near it.
        let readTimeout: TimeInterval = 600
        let upload = Task {
            let stream = BlobInputStream(dataSource: source)
            stream.readTimeout = readTimeout
            return try await StreamedUploader(transport: transport).upload(stream, to: target)
        }
        // Cancelled from a plain thread: while URLSession's shared queue is blocked, every
        // thread that creates a URLSession task (in any test running now) waits for it, and
        // those may be all of Swift's cooperative threads.
        let cancelled = LockedValue<Date?>(nil)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            cancelled.withLock { $0 = Date() }
            upload.cancel()
        }
        await #expect(throws: BlobUploadError.cancelled) { _ = try await upload.value }
        let started = try #require(cancelled.withLock { $0 })
        #expect(Date().timeIntervalSince(started) < readTimeout / 2, "the cancellation did not end the stalled read")
        // URLSession's shared queue is free again: another upload goes through.
        let after = try await StreamedUploader(transport: transport).upload(InputStream(data: Data("ok".utf8)), to: target)
        #expect((200..<300).contains(after.statusCode))
    }

    /// The server answers 201 after the request head and closes its side, long before the 8 MiB body
    /// was read: FoundationNetworking completes the task without an error, but the transfer
    /// must not be reported as a success.
    @Test(arguments: Self.transports) func anAnswerBeforeTheWholeBodyIsNoSuccess(transport: Transport) async throws {
        let size = 8 * 1024 * 1024
        // The answer follows the head, whatever the body's framing (`Content-Length` here).
        let server = try ScriptedHTTPServer(connections: [[Self.earlyAnswer]], drainBeforeClosing: true, readsBodies: false)
        let target = URL(string: "http://127.0.0.1:\(server.port)/upload/early.bin")!
        await #expect {
            let stream = BlobInputStream(dataSource: MemoryDataSource(data: Data(repeating: 3, count: size)))
            _ = try await StreamedUploader(transport: transport).upload(stream, to: target, expectedLength: Int64(size))
        } throws: { error in
            guard case .bodyIncomplete("PUT", target.absoluteString, let sent?, Int64(size)?)? = error as? BlobUploadError else {
                return false
            }
            return sent < Int64(size)
        }
    }

    /// A small body that the stream is slow to start: the 201 (sent after the head only)
    /// arrives while the client waits for the bytes, so it is seen before the last chunk went
    /// out and confirms nothing, although the stream is at its end by then (its length is
    /// known, so the last byte read ends it).
    @Test(arguments: Self.transports) func anEarlySuccessToASmallBodyIsNoSuccess(transport: Transport) async throws {
        let size = 300_000
        let server = try ScriptedHTTPServer(connections: [[Self.earlyAnswer]], drainBeforeClosing: true, readsBodies: false)
        let target = URL(string: "http://127.0.0.1:\(server.port)/upload/early.bin")!
        let source = ScriptedDataSource(bytes: [UInt8](repeating: 5, count: size))
        source.wouldBlockDelay = 0.5
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(
                BlobInputStream(dataSource: source), to: target, expectedLength: Int64(size))
        } throws: { error in
            guard case .bodyIncomplete("PUT", target.absoluteString, _, Int64(size)?)? = error as? BlobUploadError else {
                Issue.record("expected bodyIncomplete, got \(error)")
                return false
            }
            return true
        }
    }

    /// The same for a plain `InputStream`, which cannot tell how much was read: it is not at
    /// its end, and that is enough. (URLSession cannot say how much it sent either; the
    /// package's own client can, and says so.)
    @Test(arguments: Self.transports) func anAnswerBeforeTheWholePlainStreamIsNoSuccess(transport: Transport) async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.earlyAnswer]], drainBeforeClosing: true)
        let target = URL(string: "http://127.0.0.1:\(server.port)/upload/early.bin")!
        let size: Int64 = 8 << 20
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(InputStream(data: Data(repeating: 3, count: Int(size))), to: target)
        } throws: { error in
            guard case .bodyIncomplete("PUT", target.absoluteString, let sent, nil)? = error as? BlobUploadError else {
                Issue.record("expected bodyIncomplete, got \(error)")
                return false
            }
            return transport == .urlSession ? sent == nil : (sent ?? size) < size
        }
    }

    /// A caller's `Expect: 100-continue` makes nginx send a 100 while the body is under way;
    /// the upload neither stalls on it nor fails, and the copy is whole.
    @Test(arguments: Self.transports) func aCallersExpectContinueDoesNotStallTheBody(transport: Transport) async throws {
        try TestServers.requireNginx()
        let size = 3 * 1024 * 1024
        let path = try makeRandomFile(size: size)
        defer { TempFiles.remove(path) }
        let name = "expect-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        let response = try await StreamedUploader(configuration: configuration, transport: transport).upload(
            BlobInputStream(fileAtPath: path), to: TestServers.uploadURL.appendingPathComponent(name),
            headers: ["Expect": "100-continue"], expectedLength: Int64(size))
        #expect((200..<300).contains(response.statusCode))
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path))
    }

    /// A stream that gives 0 while still open (a broken third-party stream) is not at its end:
    /// the upload fails, and the package's own client does not complete the body, so nginx
    /// stores nothing.
    @Test(arguments: Self.transports) func aZeroReadBeforeTheEndIsNoEnd(transport: Transport) async throws {
        try TestServers.requireNginx()
        let name = "zero-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        await #expect(throws: BlobUploadError.self) {
            _ = try await StreamedUploader(transport: transport).upload(
                ZeroWhileOpenStream(bytes: 100_000), to: TestServers.uploadURL.appendingPathComponent(name))
        }
        // FoundationNetworking ends the body at a read of 0 whatever the status, so over
        // URLSession the server does store the short body; only the error tells.
        if transport == .automatic {
            #expect(!FileManager.default.fileExists(atPath: stored), "the server stored a body that never ended")
        }
    }

    /// An asynchronous stream has no bytes available while it opens: FoundationNetworking then
    /// ends the body at once, and that must not pass for the stream's end (it once made a 201
    /// for 0 of 300000 bytes a success).
    @Test(arguments: Self.transports) func anAsynchronousStreamStillOpeningIsNoEnd(transport: Transport) async throws {
        try TestServers.requireNginx()
        let name = "opening-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let source = ScriptedDataSource(bytes: [UInt8](repeating: 4, count: 300_000), hidesLength: true)
        source.openBehaviour = .later(delay: 0.3)
        do {
            let response = try await StreamedUploader(transport: transport).upload(
                BlobInputStream(dataSource: source, mode: .asynchronous), to: TestServers.uploadURL.appendingPathComponent(name))
            let size = (try? FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int) ?? -1
            // Success only with the whole body stored.
            #expect(size == 300_000, "reported \(response.statusCode) with \(size) bytes stored")
        } catch {
            switch error {
            case .bodyIncomplete, .network, .source: break
            default: Issue.record("unexpected \(error)")
            }
        }
    }

    /// A stream that does not keep its status (a plain subclass: `.notOpen` throughout) ends
    /// by having no bytes available, as FoundationNetworking takes it: its body is complete,
    /// with or without an expected length.
    @Test(arguments: Self.transports, [Int64(3000), nil])
    func aStreamThatDoesNotKeepItsStatusEndsByHavingNoBytes(transport: Transport, expectedLength: Int64?) async throws {
        try TestServers.requireNginx()
        let name = "untracked-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let response = try await StreamedUploader(transport: transport).upload(
            UntrackedStatusStream(bytes: 3000), to: TestServers.uploadURL.appendingPathComponent(name), expectedLength: expectedLength)
        #expect((200..<300).contains(response.statusCode))
        #expect((try FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int) == 3000)
    }

    private static let earlyAnswer = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
}

/// Yields `bytes` bytes, then reads of 0 while its status stays `.open`: a stream that breaks
/// the rule that only the end reads as 0.
final class ZeroWhileOpenStream: InputStream {
    private var remaining: Int
    private var status = Stream.Status.notOpen

    init(bytes: Int) {
        remaining = bytes
        super.init(data: Data())
    }

    override func open() { status = .open }
    override func close() { status = .closed }
    override var streamStatus: Stream.Status { status }
    override var streamError: Error? { nil }
    override var hasBytesAvailable: Bool { true }
    override var delegate: (any StreamDelegate)? { get { nil } set {} }
    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool { false }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let count = min(len, remaining)
        buffer.update(repeating: 7, count: count)
        remaining -= count
        return count
    }
}

/// Yields `bytes` bytes and keeps no status (it stays `.notOpen`): only `hasBytesAvailable`
/// tells its end.
final class UntrackedStatusStream: InputStream {
    private var remaining: Int

    init(bytes: Int) {
        remaining = bytes
        super.init(data: Data())
    }

    override func open() {}
    override func close() {}
    override var hasBytesAvailable: Bool { remaining > 0 }
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        let count = min(len, remaining)
        buffer.update(repeating: 9, count: count)
        remaining -= count
        return count
    }
}
