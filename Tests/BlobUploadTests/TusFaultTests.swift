import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import SystemCalls
import Testing

/// Failures between the client and the server: connections cut mid-PATCH, another client
/// moving the offset, chunks corrupted in transit.
@Suite struct TusFaultTests {
    /// The proxy resets the connection in the middle of PATCH bodies; tuspyserver keeps the
    /// bytes it received, so the server's offset lands inside the chunk that was cut.
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func connectionsCutMidPatchAreRetriedFromTheServersOffset(transport: TusClient.Transport) async throws {
        // A server of its own: after a cut, tuspyserver may hold the upload's lock for up to
        // 30 s and stall other requests, which must not reach other tests.
        let server = try await TusServerProcess.start()
        defer { server.stop() }
        let chunk = 512 * 1024
        let size = 4 * chunk + 1000
        let path = try makeRandomFile(size: size, seed: 11)
        defer { TempFiles.remove(path) }
        let proxy = try FaultProxy(targetPort: server.port)
        defer { proxy.stop() }
        // How URLSession spreads requests over connections is its business; every connection
        // that carries a whole PATCH body is cut inside it, up to three times.
        proxy.plan(Array(repeating: .cut(after: chunk + chunk / 2, direction: .request), count: 3))
        let client = TusClient(endpoint: proxy.url(for: server.filesURL), transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = chunk
        options.retry.initialDelay = 0.05
        let log = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        let cuts = proxy.statistics.cuts
        #expect(cuts >= 2)
        #expect(result.retries == cuts)
        // A reset shows as a network error, or, when libcurl silently re-sends the request on
        // a fresh connection, as 409: the server had kept part of the first attempt.
        #expect(log.retriedErrors.allSatisfy { error in
            switch error {
            case .network, .httpStatus("PATCH", _, 409, _): true
            default: false
            }
        }, "\(log.retriedErrors)")
        // After each cut the client continued from an offset it learned from HEAD, inside
        // the chunk it was sending, not from the chunk's start.
        #expect(log.confirmedOffsets.contains { $0 % Int64(chunk) != 0 && $0 != Int64(size) })
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path, dataRoot: server.dataDirectory))
    }

    /// Another client appends the next chunk behind the uploader's back: its PATCH gets 409
    /// Conflict, it asks HEAD, skips what the server already has and finishes.
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aConflictingOffsetIsResolvedWithHead(transport: TusClient.Transport) async throws {
        try TestServers.requireTus()
        let chunk = 256 * 1024
        let size = 4 * chunk
        let path = try makeRandomFile(size: size, seed: 12)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.tusFilesURL, transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = chunk
        let created = EventLog<URL>()
        defer { TestServers.removeUploads(created.all) }
        let interfered = LockedValue(false)
        options.chunkBodyHook = { offset, body in
            guard offset == Int64(chunk), !interfered.withLock({ $0 }), let url = created.all.first else { return body }
            interfered.withLock { $0 = true }
            // The very bytes the uploader is about to send, sent first by someone else.
            #expect((try? await sendRawPatch(body, at: offset, to: url)) == 204)
            return body
        }
        let log = EventLog<TusUploadEvent>()
        let result = try await client.upload(.file(path: path), options: options) { event in
            if case .created(let url) = event { created.append(url) }
            log.append(event)
        }
        #expect(log.retriedErrors.count == 1)
        guard case .httpStatus("PATCH", _, 409, _)? = log.retriedErrors.first else {
            Issue.record("expected a 409 retry, got \(log.retriedErrors)")
            return
        }
        // HEAD moved the uploader straight to the end of the other client's chunk.
        #expect(log.confirmedOffsets == [0, Int64(chunk), Int64(2 * chunk), Int64(3 * chunk), Int64(size)])
        // Four PATCH bodies: three accepted, one refused with 409.
        #expect(result.bytesSent == Int64(size))
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    /// A chunk corrupted once on its way (after its checksum was computed) is answered 460 by
    /// the checksum-verifying server and sent again, intact.
    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aChecksumMismatchResendsTheChunk(transport: TusClient.Transport) async throws {
        try TestServers.requireChecksumTus()
        let chunk = 256 * 1024
        let size = 3 * chunk + 77
        let path = try makeRandomFile(size: size, seed: 13)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.checksumTusFilesURL, transport: transport)
        var options = TusUploadOptions()
        options.chunkSize = chunk
        let corrupted = LockedValue(false)
        options.chunkBodyHook = { offset, body in
            guard offset == Int64(chunk), !corrupted.withLock({ $0 }) else { return body }
            corrupted.withLock { $0 = true }
            var damaged = body
            damaged[damaged.startIndex + 1000] ^= 0x40
            return damaged
        }
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let result = try await client.upload(.file(path: path), options: options) { log.append($0) }
        #expect(result.checksumAlgorithm == "sha256")
        guard case .httpStatus("PATCH", _, 460, _)? = log.retriedErrors.first, log.retriedErrors.count == 1 else {
            Issue.record("expected one 460 retry, got \(log.retriedErrors)")
            return
        }
        #expect(result.bytesSent == Int64(size + chunk))
        #expect(try tusStoredCopyMatches(result.uploadURL, file: path))
    }

    @Test func aChunkThatKeepsArrivingCorruptedFails() async throws {
        try TestServers.requireChecksumTus()
        let path = try makeRandomFile(size: 100_000, seed: 14)
        defer { TempFiles.remove(path) }
        let client = TusClient(endpoint: TestServers.checksumTusFilesURL)
        var options = TusUploadOptions()
        options.chunkBodyHook = { _, body in
            var damaged = body
            damaged[damaged.startIndex] ^= 1
            return damaged
        }
        let created = EventLog<URL>()
        defer { TestServers.removeUploads(created.all) }
        await #expect {
            _ = try await client.upload(.file(path: path), options: options) { event in
                if case .created(let url) = event { created.append(url) }
            }
        } throws: { error in
            guard case .checksumMismatch(let url, 0, 3)? = error as? BlobUploadError else { return false }
            return url == created.all.first?.absoluteString
        }
        // Nothing corrupted was stored.
        #expect(try await client.status(of: try #require(created.all.first)).offset == 0)
    }

    @Test func aServerThatStaysDownExhaustsTheRetries() async throws {
        let path = try makeRandomFile(size: 1000)
        defer { TempFiles.remove(path) }
        // A port that nothing listens on, and that no other test's server can take meanwhile.
        let down = try RefusingPort()
        let endpoint = URL(string: "http://127.0.0.1:\(down.port)/files/")!
        var options = TusUploadOptions()
        options.retry.maxAttempts = 3
        options.retry.initialDelay = 0.01
        let log = EventLog<TusUploadEvent>()
        await #expect {
            _ = try await TusClient(endpoint: endpoint).upload(.file(path: path), options: options) { log.append($0) }
        } throws: { error in
            guard case .retriesExhausted(endpoint.absoluteString, 0, 3, .network("OPTIONS", _, _, _))? = error as? BlobUploadError else {
                return false
            }
            return true
        }
        #expect(log.retriedErrors.count == 2)
    }
}
