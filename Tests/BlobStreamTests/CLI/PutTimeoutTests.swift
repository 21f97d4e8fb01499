import BlobTestSupport
import Foundation
import Testing

/// `put --timeout`: how long the server may take, the answer after the whole body included
/// (a proxy that stores a large body before passing it on answers late).
@Suite struct PutTimeoutTests {
    @Test(arguments: ["0", "-1", "abc", "", "86401", "nan", "inf"])
    func refusesSecondsOutOfRange(value: String) async throws {
        let result = try await ToolProcess.execute(ToolProcess.blobstream(), ["put", "--timeout", value, "/etc/hostname", "http://127.0.0.1:1/x"])
        #expect(result.status == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--timeout") && result.standardError.contains("'\(value)'"), "\(result.standardError)")
    }

    /// A server that takes the request and never answers: the wait for its answer ends at
    /// `--timeout`, and the message says the whole request went out.
    @Test func theAnswerAfterTheWholeBodyIsWaitedForAsLongAsTheTimeout() async throws {
        // Its answer's first byte would come after a minute.
        let server = try ScriptedHTTPServer(
            connections: [["HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"]], readsBodies: true,
            pacing: .init(after: 0, bytes: 1, interval: 60, steps: 1))
        defer { server.stop() }
        let start = Date()
        let result = try await ToolProcess.execute(
            ToolProcess.blobstream(), ["put", "--timeout", "2", "/etc/hostname", "http://127.0.0.1:\(server.port)/x"])
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("timed out waiting for the answer, after sending the whole request"), "\(result.standardError)")
        #expect(result.standardError.hasSuffix("; the limit is 2 s\n"), "\(result.standardError)")
        #expect(Date().timeIntervalSince(start) >= 2, "the answer was waited for")
    }
}
