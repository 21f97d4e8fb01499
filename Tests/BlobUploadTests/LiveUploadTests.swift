import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Live data of unknown length into uploads: a tus upload that defers its length
/// (creation-defer-length) and a chunked PUT, against the real servers; refusals and retries
/// against scripted ones.
@Suite struct LiveUploadTests {
    @Test func aDeferredLengthTusUploadOf100MiBIsByteIdentical() async throws {
        try TestServers.requireTus()
        let size = 100 << 20
        let chunks = GeneratedBytes(size: size, seed: 71)
        let expected = try writeGeneratedFile(size: size, seed: 71)
        defer { TempFiles.remove(expected) }
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.live(name: "camera/clip.mp4", chunks)) { log.append($0) }
        #expect(result.length == Int64(size))
        #expect(result.bytesSent == Int64(size))
        #expect(log.all.first == .created(uploadURL: result.uploadURL))
        // The total is unknown until the end was read: the progress says so.
        let totals = log.all.compactMap { if case .progress(let progress) = $0 { progress.totalBytes } else { nil } }
        #expect(totals.last == Int64(size))
        #expect(try tusStoredCopyMatches(result.uploadURL, file: expected))
        let status = try await client.status(of: result.uploadURL)
        #expect(status == TusUploadStatus(
            offset: Int64(size), length: Int64(size),
            metadata: ["filename": "clip.mp4", "filetype": "application/octet-stream"]))
    }

    @Test(arguments: [0, 1, 1000, 1001, 999])
    func theLastPatchDeclaresTheLengthAtEveryBoundary(size: Int) async throws {
        try TestServers.requireTus()
        var chunks = GeneratedBytes(size: size, seed: 72)
        chunks.sizes = [333, 1000]
        let client = TusClient(endpoint: TestServers.tusFilesURL)
        var options = TusUploadOptions()
        options.chunkSize = 1000
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.live(name: "edge.bin", chunks), options: options) { log.append($0) }
        #expect(result.length == Int64(size))
        let status = try await client.status(of: result.uploadURL)
        #expect(status.offset == Int64(size))
        #expect(status.length == Int64(size))
        let stored = try Data(contentsOf: URL(fileURLWithPath: TestServers.tusDataPath(forUpload: result.uploadURL)))
        #expect(stored == Data(TempFiles.pseudoRandomBytes(count: size, seed: 72)))
    }

    @Test func aThrowingProducerFailsTheTusUploadWithItsError() async throws {
        try TestServers.requireTus()
        var chunks = GeneratedBytes(size: 10 << 20, seed: 73)
        chunks.failAt = 3 << 20
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        var options = TusUploadOptions()
        options.chunkSize = 1 << 20
        await #expect(throws: BlobUploadError.producerFailed(
            source: "encoder", offset: 3 << 20, error: ProducerError(ProducerBroke()))) {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(
                .live(name: "encoder", chunks), options: options) { log.append($0) }
        }
        // The producer's own error, for the caller to match.
        var broken = GeneratedBytes(size: 10, seed: 73)
        broken.failAt = 0
        do {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.live(name: "again", broken)) { log.append($0) }
            Issue.record("the upload of a broken producer succeeded")
        } catch {
            guard case .producerFailed(_, 0, let wrapped) = error else {
                Issue.record("expected producerFailed, got \(error)")
                return
            }
            #expect(wrapped.underlying is ProducerBroke)
            #expect(error.description.contains("the encoder broke"))
        }
        // The upload never got its length: the server has no complete file.
        let uploadURL = try #require(log.createdURLs.first)
        let status = try await TusClient(endpoint: TestServers.tusFilesURL).status(of: uploadURL)
        #expect(status.length == nil)
        #expect(status.offset < 3 << 20)
    }

    @Test func aCancelledTusUploadStopsPulling() async throws {
        try TestServers.requireTus()
        var chunks = GeneratedBytes(size: 10 << 20, seed: 74)
        chunks.stallAt = 2 << 20
        let log = chunks.log
        let events = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(events.createdURLs) }
        var options = TusUploadOptions()
        options.chunkSize = 1 << 20
        let upload = Task {
            try await TusClient(endpoint: TestServers.tusFilesURL).upload(
                .live(name: "relay", chunks), options: options) { events.append($0) }
        }
        // The producer is stalled at 2 MiB: the upload waits for it there.
        #expect(await log.wait { $0.stalled })
        #expect(events.confirmedOffsets.contains(1 << 20))
        upload.cancel()
        await #expect(throws: BlobUploadError.cancelled) { _ = try await upload.value }
        #expect(await log.wait { $0.cancelled && $0.released })
        #expect(log.pullsAfterCancel == 0)
    }

    /// The read ahead waits for the producer while the upload waits to retry a PATCH: a
    /// cancellation then must stop that read too, not leave it pulling until the producer
    /// yields (or the read times out).
    @Test func aCancelledUploadStopsTheReadAheadThatWaitsForTheProducer() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.deferOptions, ScriptedTus.created("/files/live")]])
        defer { server.stop() }
        var chunks = GeneratedBytes(size: 10_000, seed: 82)
        chunks.sizes = [1000]
        chunks.stallAt = 1500
        let log = chunks.log
        var options = ScriptedTus.options(chunkSize: 1000)
        options.retry.initialDelay = 60
        let upload = Task {
            try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(.live(name: "relay", chunks), options: options)
        }
        #expect(await log.wait { $0.stalled })
        upload.cancel()
        await #expect(throws: BlobUploadError.cancelled) { _ = try await upload.value }
        #expect(await log.wait { $0.cancelled && $0.released })
        #expect(log.pullsAfterCancel == 0)
    }

    @Test func aServerWithoutDeferLengthIsRefusedBeforeAnythingIsPulled() async throws {
        let server = try ScriptedHTTPServer(connections: [[ScriptedTus.options]])
        defer { server.stop() }
        let endpoint = ScriptedTus.endpoint(server)
        let chunks = GeneratedBytes(size: 1000, seed: 75)
        await #expect(throws: BlobUploadError.deferLengthUnsupported(endpoint: endpoint.absoluteString, source: "mic")) {
            _ = try await TusClient(endpoint: endpoint).upload(.live(name: "mic", chunks))
        }
        #expect(chunks.log.pulls == 0)
        #expect(server.requests.count == 1)
        let message = BlobUploadError.deferLengthUnsupported(endpoint: endpoint.absoluteString, source: "mic").description
        #expect(message.contains(endpoint.absoluteString) && message.contains("creation-defer-length"))
    }

    /// A partial PATCH is continued from the chunk in hand, and the last PATCH, only it,
    /// carries the length: the bytes sent, never a number the server suggested.
    @Test func partialWritesContinueFromTheChunkInHand() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/live"),
            ScriptedTus.patched(400), ScriptedTus.patched(1000), ScriptedTus.patched(2000), ScriptedTus.patched(2500),
            ScriptedTus.head(offset: 2500, length: 2500),
        ]])
        defer { server.stop() }
        var chunks = GeneratedBytes(size: 2500, seed: 76)
        chunks.sizes = [700]
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            .live(name: "live.bin", chunks), options: ScriptedTus.options(chunkSize: 1000))
        #expect(result.length == 2500)
        let requests = server.requests
        #expect(requests.count == 7)
        #expect(requests[6].hasPrefix("HEAD "), "the server is asked whether it took the length")
        #expect(requests[1].contains("Upload-Defer-Length: 1\r\n"))
        #expect(!requests[1].contains("Upload-Length"))
        let patches = requests.dropFirst(2).dropLast().map { Self.field("Upload-Offset", in: $0) }
        #expect(patches == ["0", "400", "1000", "2000"])
        #expect(requests.dropFirst(2).dropLast().map { Self.field("Upload-Length", in: $0) } == [nil, nil, nil, "2500"])
        // The scripted server keeps bodies as text: their lengths tell which bytes went.
        #expect(requests.dropFirst(2).dropLast().map { Self.field("Content-Length", in: $0) } == ["1000", "600", "1000", "500"])
    }

    /// A server that goes back behind the chunk in hand would need bytes the live data no
    /// longer has: a typed refusal, and nothing more is sent.
    @Test func aRetryThatNeedsEarlierBytesIsRefused() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/live"), ScriptedTus.patched(1000),
            ScriptedTus.conflict, Self.deferredHead(offset: 0),
        ]])
        defer { server.stop() }
        let chunks = GeneratedBytes(size: 5000, seed: 77)
        await #expect(throws: BlobUploadError.notReplayable(source: "live.bin", offset: 0, available: 1000)) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
                .live(name: "live.bin", chunks), options: ScriptedTus.options(chunkSize: 1000))
        }
        #expect(server.requests.filter { $0.hasPrefix("PATCH") }.count == 2)
    }

    /// A gone upload is started over only while the first chunk is still in hand; later, no
    /// new upload is created that could never get the bytes before.
    @Test func aGoneUploadStartsOverOnlyFromTheFirstChunk() async throws {
        let gone = "HTTP/1.1 404 Not Found\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n"
        var options = ScriptedTus.options(chunkSize: 1000)
        options.restartIfGone = true

        let early = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/a"), gone, ScriptedTus.created("/files/b"), ScriptedTus.patched(600),
            ScriptedTus.head(offset: 600, length: 600),
        ]])
        defer { early.stop() }
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(early)).upload(
            .live(name: "live.bin", GeneratedBytes(size: 600, seed: 83)), options: options)
        #expect(result.uploadURL.path == "/files/b")
        #expect(result.length == 600)

        let late = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/a"), ScriptedTus.patched(1000), gone,
        ]])
        defer { late.stop() }
        await #expect(throws: BlobUploadError.notReplayable(source: "live.bin", offset: 0, available: 1000)) {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(late)).upload(
                .live(name: "live.bin", GeneratedBytes(size: 5000, seed: 83)), options: options)
        }
        #expect(late.requests.filter { $0.hasPrefix("POST") }.count == 1)
    }

    /// A server that answers the last PATCH but ignores the Upload-Length it declared keeps an
    /// upload of unknown length, never finished: not a success.
    @Test func aServerThatIgnoredTheDeclaredLengthIsNoSuccess() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/live"), ScriptedTus.patched(600), Self.deferredHead(offset: 600),
        ]])
        defer { server.stop() }
        await #expect {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
                .live(name: "live.bin", GeneratedBytes(size: 600, seed: 84)), options: ScriptedTus.options(chunkSize: 1000))
        } throws: { error in
            guard case .protocolViolation(_, _, let reason)? = error as? BlobUploadError else { return false }
            return reason.contains("Upload-Length none") && reason.contains("did not finish")
        }
    }

    /// A server that moves a finished upload away (a post-finish hook) answers the HEAD after
    /// the last PATCH with 404: the upload was finished, and is reported so.
    @Test func anUploadMovedAwayOnceFinishedIsASuccess() async throws {
        let gone = "HTTP/1.1 404 Not Found\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/live"), ScriptedTus.patched(600), gone,
        ]])
        defer { server.stop() }
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            .live(name: "live.bin", GeneratedBytes(size: 600, seed: 85)), options: ScriptedTus.options(chunkSize: 1000))
        #expect(result.length == 600)
        #expect(server.requests.last?.hasPrefix("HEAD ") == true)
    }

    /// A `HEAD` that names a length before the client declared one invents it.
    @Test func aLengthTheClientNeverSentIsRefused() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            Self.deferOptions, ScriptedTus.created("/files/live"), ScriptedTus.conflict,
            ScriptedTus.head(offset: 0, length: 1000),
        ]])
        defer { server.stop() }
        await #expect {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
                .live(name: "live.bin", GeneratedBytes(size: 5000, seed: 78)), options: ScriptedTus.options(chunkSize: 1000))
        } throws: { error in
            guard case .protocolViolation(_, let url, let reason)? = error as? BlobUploadError else { return false }
            return url.hasSuffix("/files/live") && reason.contains("Upload-Length 1000")
        }
    }

    /// Live data that grows past the server's `Tus-Max-Size` is refused before the PATCH that
    /// would cross it, as a known length past it is before the upload is created.
    @Test func liveDataPastTheServersMaximumIsTooLarge() async throws {
        let options = Self.deferOptions.replacingOccurrences(of: "\r\n\r\n", with: "\r\nTus-Max-Size: 1500\r\n\r\n")
        let server = try ScriptedHTTPServer(connections: [[
            options, ScriptedTus.created("/files/live"), ScriptedTus.patched(1000),
        ]])
        defer { server.stop() }
        let endpoint = ScriptedTus.endpoint(server)
        await #expect(throws: BlobUploadError.tooLarge(endpoint: endpoint.absoluteString, length: 2000, maxSize: 1500)) {
            _ = try await TusClient(endpoint: endpoint).upload(
                .live(name: "live.bin", GeneratedBytes(size: 5000, seed: 80)), options: ScriptedTus.options(chunkSize: 1000))
        }
        #expect(server.requests.filter { $0.hasPrefix("PATCH") }.count == 1, "\(server.requests)")
    }

    @Test func liveDataCannotResumeAnUpload() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.deferOptions]])
        defer { server.stop() }
        let chunks = GeneratedBytes(size: 10, seed: 79)
        let existing = ScriptedTus.endpoint(server).appendingPathComponent("old")
        await #expect {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(.live(name: "live", chunks), resuming: existing)
        } throws: { error in
            guard case .invalidOption("resuming", _)? = error as? BlobUploadError else { return false }
            return true
        }
        #expect(chunks.log.pulls == 0)
    }

    @Test func aChunkedPutOfALiveSequenceIsByteIdentical() async throws {
        try TestServers.requireNginx()
        let size = 20_000_003
        let expected = try writeGeneratedFile(size: size, seed: 80)
        defer { TempFiles.remove(expected) }
        let name = "live-put-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let response = try await StreamedUploader().upload(
            .live(name: "relay", GeneratedBytes(size: size, seed: 80)), to: TestServers.uploadURL.appendingPathComponent(name))
        #expect((200..<300).contains(response.statusCode))
        #expect(response.bytesSent == Int64(size))
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: expected))
    }

    /// The same call sends any upload source: a file, its length checked.
    @Test func aPutOfAFileSourceIsByteIdentical() async throws {
        try TestServers.requireNginx()
        let path = try makeRandomFile(size: 3_000_001, seed: 84)
        defer { TempFiles.remove(path) }
        let name = "source-put-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        let response = try await StreamedUploader().upload(.file(path: path), to: TestServers.uploadURL.appendingPathComponent(name))
        #expect(response.bytesSent == 3_000_001)
        #expect(try TempFiles.sha256(ofFileAtPath: stored) == TempFiles.sha256(ofFileAtPath: path))
    }

    @Test func aThrowingProducerFailsThePutAndNothingIsStored() async throws {
        try TestServers.requireNginx()
        var chunks = GeneratedBytes(size: 8 << 20, seed: 81)
        chunks.failAt = 1 << 20
        let name = "live-put-broken-\(UUID().uuidString).bin"
        let stored = TestServers.uploadRoot + "/" + name
        defer { TempFiles.remove(stored) }
        await #expect(throws: BlobUploadError.producerFailed(
            source: "relay", offset: 1 << 20, error: ProducerError(ProducerBroke()))) {
            _ = try await StreamedUploader().upload(
                .live(name: "relay", chunks), to: TestServers.uploadURL.appendingPathComponent(name))
        }
        #expect(!FileManager.default.fileExists(atPath: stored))
    }

    // MARK: Scripted answers

    /// OPTIONS of a server with creation-defer-length.
    static let deferOptions = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\n"
        + "Tus-Extension: creation,creation-defer-length,termination\r\n\r\n"

    /// HEAD of an upload whose length is still deferred.
    static func deferredHead(offset: Int64) -> String {
        "HTTP/1.1 200 OK\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: \(offset)\r\nUpload-Defer-Length: 1\r\n"
            + "Cache-Control: no-store\r\nContent-Length: 0\r\n\r\n"
    }

    /// The value of the header field `name` in a raw request.
    static func field(_ name: String, in request: String) -> String? {
        let head = request.components(separatedBy: "\r\n\r\n")[0]
        return head.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
    }

}
