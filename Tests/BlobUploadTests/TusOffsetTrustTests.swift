import BlobStream
import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// A server can never make an upload report success for bytes it did not receive: every
/// offset it reports is checked against what this client sent.
@Suite struct TusOffsetTrustTests {
    private func expectViolation(
        _ server: ScriptedHTTPServer, length: Int, resuming: URL? = nil, mentioning fragment: String
    ) async {
        let client = TusClient(endpoint: ScriptedTus.endpoint(server))
        await #expect {
            _ = try await client.upload(
                ScriptedTus.source(length), resuming: resuming, options: ScriptedTus.options(chunkSize: 1000))
        } throws: { error in
            guard case .protocolViolation(_, _, let reason)? = error as? BlobUploadError else { return false }
            return reason.contains(fragment)
        }
    }

    @Test func aPatchAnswerBeyondTheBytesSentIsAViolation() async throws {
        // The first PATCH carries bytes 0..<1000; the server claims 2000, then the rest.
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.patched(2000), ScriptedTus.patched(3000),
        ]])
        await expectViolation(server, length: 3000, mentioning: "Upload-Offset 2000")
        // Nothing more was sent after the impossible answer.
        #expect(server.requests.count == 3)
    }

    /// A server that keeps losing what it confirmed (PATCH to 1000, then 500 on the next one
    /// and a HEAD back at 0) makes no progress: resending bytes it had confirmed before does
    /// not reset the failure count, so the upload gives up after the retry budget instead of
    /// cycling for good.
    @Test func anOffsetThatKeepsFallingBackSpendsTheRetryBudget() async throws {
        let failed = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
        let cycle = [ScriptedTus.patched(1000), failed, ScriptedTus.head(offset: 0, length: 3000)]
        let server = try ScriptedHTTPServer(connections: [
            [ScriptedTus.options, ScriptedTus.created("/files/a")] + Array([[String]](repeating: cycle, count: 10).joined()),
        ])
        var options = ScriptedTus.options(chunkSize: 1000)
        options.retry.maxAttempts = 3
        await #expect {
            _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(ScriptedTus.source(3000), options: options)
        } throws: { error in
            guard case .retriesExhausted(_, _, 3, .httpStatus(_, _, 500, _))? = error as? BlobUploadError else {
                Issue.record("expected the retries spent on HTTP 500, got \(error)")
                return false
            }
            return true
        }
        #expect(server.requests.count <= 2 + 3 * 3)
    }

    @Test func aPatchAnswerBehindItsOffsetIsAViolation() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.patched(1000), ScriptedTus.patched(500),
        ]])
        await expectViolation(server, length: 3000, mentioning: "Upload-Offset 500")
    }

    @Test func aPartialPatchIsContinuedFromWhereTheServerStopped() async throws {
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"),
            ScriptedTus.patched(400), ScriptedTus.patched(1400), ScriptedTus.patched(2400), ScriptedTus.patched(3000),
        ]])
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(3000), options: ScriptedTus.options(chunkSize: 1000))
        #expect(result.length == 3000)
        let offsets = server.requests.compactMap { request in
            request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("upload-offset:") }
        }
        #expect(offsets == ["Upload-Offset: 0", "Upload-Offset: 400", "Upload-Offset: 1400", "Upload-Offset: 2400"])
    }

    @Test func aHeadOffsetBeyondTheBytesSentIsAViolation() async throws {
        // The first PATCH (bytes 0..<1000) loses a race; the server then claims the whole upload.
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), ScriptedTus.conflict,
            ScriptedTus.head(offset: 3000, length: 3000),
        ]])
        await expectViolation(server, length: 3000, mentioning: "3000")
    }

    @Test func aResumedUploadTrustsTheFirstHeadAndThenOnlyWhatWasSent() async throws {
        let endpoint = "/files/a"
        // Resumed at 1000 (bytes this process never sent: the server's word is the truth); the
        // PATCH of 1000..<2000 loses a race, after which 2000 is plausible, 3000 is not.
        let honest = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.head(offset: 1000, length: 3000), ScriptedTus.conflict,
            ScriptedTus.head(offset: 2000, length: 3000), ScriptedTus.patched(3000),
        ]])
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(honest)).upload(
            ScriptedTus.source(3000), resuming: URL(string: "http://127.0.0.1:\(honest.port)\(endpoint)")!,
            options: ScriptedTus.options(chunkSize: 1000))
        #expect(result.startOffset == 1000)

        let lying = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.head(offset: 1000, length: 3000), ScriptedTus.conflict,
            ScriptedTus.head(offset: 3000, length: 3000),
        ]])
        await expectViolation(
            lying, length: 3000, resuming: URL(string: "http://127.0.0.1:\(lying.port)\(endpoint)")!, mentioning: "3000")
    }
}
