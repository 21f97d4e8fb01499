import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// A creation `POST` that reached the server and lost its answer is sent again; the upload then
/// succeeds, and the upload the first attempt may have made is reported, not left unsaid (tus
/// has no request that lists uploads, so it cannot be named).
@Suite struct TusCreateRetryTests {
    static func createdAgain(_ events: [TusUploadEvent]) -> [(URL, Int)] {
        events.compactMap { event in
            if case .createdAgain(let url, let earlier) = event { return (url, earlier) }
            return nil
        }
    }

    @Test func aCreationSentAgainAfterItsAnswerWasLostIsReported() async throws {
        // The first connection reads the POST and closes without an answer.
        let server = try ScriptedHTTPServer(connections: [
            [ScriptedTus.options, ""], [ScriptedTus.created("/files/2"), ScriptedTus.patched(1000)],
        ])
        defer { server.stop() }
        let events = EventLog<TusUploadEvent>()
        let result = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(1000), options: ScriptedTus.options(chunkSize: 1000)) { events.append($0) }
        #expect(server.requests.filter { $0.hasPrefix("POST ") }.count == 2)
        let reported = Self.createdAgain(events.all)
        try #require(reported.count == 1, "\(events.all)")
        #expect(reported[0].0 == result.uploadURL)
        #expect(reported[0].1 == 1)
    }

    @Test func aCreationAnsweredAtOnceReportsNothing() async throws {
        let server = try ScriptedHTTPServer(connections: [
            [ScriptedTus.options, ScriptedTus.created("/files/1"), ScriptedTus.patched(1000)],
        ])
        defer { server.stop() }
        let events = EventLog<TusUploadEvent>()
        _ = try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(
            ScriptedTus.source(1000), options: ScriptedTus.options(chunkSize: 1000)) { events.append($0) }
        #expect(Self.createdAgain(events.all).isEmpty, "\(events.all)")
    }

    /// A connection never made cannot have created anything; every other failure may have.
    @Test func onlyAConnectionNeverMadeCannotHaveCreated() {
        let url = "http://127.0.0.1:1/files/"
        #expect(!TusUpload.mayHaveReachedServer(.network(method: "POST", url: url, reason: "refused", code: URLError.Code.cannotConnectToHost.rawValue)))
        #expect(!TusUpload.mayHaveReachedServer(.network(method: "POST", url: url, reason: "no host", code: URLError.Code.cannotFindHost.rawValue)))
        #expect(TusUpload.mayHaveReachedServer(.network(method: "POST", url: url, reason: "lost", code: URLError.Code.networkConnectionLost.rawValue)))
        #expect(TusUpload.mayHaveReachedServer(.network(method: "POST", url: url, reason: "timed out", code: URLError.Code.timedOut.rawValue)))
        #expect(TusUpload.mayHaveReachedServer(.httpStatus(method: "POST", url: url, statusCode: 503, message: nil)))
    }
}
