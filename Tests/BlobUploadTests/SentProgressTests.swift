import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Progress that tells bytes sent apart from bytes the server confirmed: tus's offset after
/// each PATCH, S3's completed parts.
@Suite struct SentProgressTests {
    @Test func tusReportsBytesSentAheadOfTheConfirmedOffset() async throws {
        try TestServers.requireTus()
        let chunk = 1 << 20
        let size = 3 * chunk + 4321
        let path = try makeRandomFile(size: size, seed: 101)
        defer { TempFiles.remove(path) }
        var options = TusUploadOptions()
        options.chunkSize = chunk
        let log = EventLog<TusUploadEvent>()

        let result = try await TusClient(endpoint: TestServers.tusFilesURL).upload(.file(path: path), options: options) { log.append($0) }

        #expect(log.confirmedOffsets == [0, 1, 2, 3].map { Int64($0 * chunk) } + [Int64(size)], "confirmations are unchanged")
        var confirmed: Int64 = 0
        var lastSent: Int64 = 0
        var sentEvents = 0
        for event in log.all {
            switch event {
            case .progress(let progress):
                confirmed = progress.completedBytes
                #expect(progress.sentBytes == nil)
            case .sent(let progress):
                sentEvents += 1
                let sent = try #require(progress.sentBytes)
                // Sent runs ahead of the confirmed offset, within the PATCH under way, never back.
                #expect(progress.completedBytes == confirmed)
                #expect(sent > confirmed && sent <= min(confirmed + Int64(chunk), Int64(size)))
                #expect(sent > lastSent)
                #expect(progress.totalBytes == Int64(size))
                lastSent = sent
            default:
                break
            }
        }
        #expect(lastSent == Int64(size))
        #expect(sentEvents == 3 * 4 + 1, "every 256 KiB of each 1 MiB PATCH, and the short last one")
        try await TusClient(endpoint: TestServers.tusFilesURL).terminate(result.uploadURL)
    }

    /// A PATCH sent again on a new connection (the kept one turned out stale: it took the body
    /// and closed without a word) counts its bytes from 0 again: "sent" never passes the
    /// upload's length by counting a body twice.
    @Test func aPatchSentAgainCountsFromZero() async throws {
        let size = 300_000
        let server = try ScriptedHTTPServer(connections: [
            [ScriptedTus.options, ScriptedTus.created("/files/a"), ""],
            [ScriptedTus.patched(Int64(size))],
        ])
        defer { server.stop() }
        let log = EventLog<TusUploadEvent>()
        _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(size), options: ScriptedTus.options(chunkSize: 1 << 20)) { log.append($0) }
        let sent = log.all.compactMap { event -> Int64? in
            if case .sent(let progress) = event { return progress.sentBytes } else { return nil }
        }
        #expect(server.requests.filter { $0.hasPrefix("PATCH ") }.count == 2, "\(server.requests.map { $0.prefix(20) })")
        #expect(sent.filter { $0 == Int64(size) }.count == 2, "\(sent)")
        #expect(sent.allSatisfy { $0 <= Int64(size) }, "\(sent)")
    }

    @Test func s3ReportsBytesOfPartsInFlightApartFromCompletedParts() async throws {
        let (client, bucket) = try MotoS3.makeBucket()
        defer { MotoS3.removeBucket(bucket) }
        let part = 5 << 20
        let size = 3 * part + 999
        let path = try makeRandomFile(size: size, seed: 102)
        defer { TempFiles.remove(path) }
        var options = S3UploadOptions()
        options.partSize = part
        options.parallelParts = 2
        let log = EventLog<S3UploadEvent>()

        _ = try await client.upload(.file(path: path), key: "sent.bin", options: options) { log.append($0) }

        var confirmed: Int64 = 0
        var sentValues: [Int64] = []
        for event in log.all {
            switch event {
            case .progress(let done, _):
                // Parts complete in any order: the sum of some whole parts (the last one 999 bytes).
                #expect(done % Int64(part) == 0 || done % Int64(part) == 999, "only whole parts are confirmed: \(done)")
                confirmed = done
            case .sent(let sent, let total):
                #expect(total == Int64(size))
                #expect(sent >= confirmed && sent <= Int64(size))
                sentValues.append(sent)
            default:
                break
            }
        }
        #expect(sentValues.last == Int64(size))
        #expect(sentValues == sentValues.sorted(), "no part failed, so the bytes sent only grow")
        #expect(sentValues.count >= 3 * 20 + 1, "every 256 KiB of each part")
        #expect(try MotoS3.sha256(bucket: bucket, key: "sent.bin") == TempFiles.sha256(ofFileAtPath: path))
    }
}
