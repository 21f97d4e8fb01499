import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Testing

/// Answers to a streamed PUT that are not plain successes.
@Suite struct StreamedUploadAnswerTests {
    /// A 303 after the whole body says the server handled the PUT and where its result is
    /// (RFC 9110 §15.4.4): the upload succeeded, and nothing is sent again or fetched.
    @Test(arguments: [Transport.automatic, .urlSession])
    func aSeeOtherAfterTheWholeBodyIsTheAnswer(transport: Transport) async throws {
        let body = [UInt8](repeating: 5, count: 300_000)
        let server = try ScriptedHTTPServer(connections: [[
            "HTTP/1.1 303 See Other\r\nLocation: /stored/object\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ]], readsBodies: true, readsChunkedBodies: true)
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/object")!
        let response = try await StreamedUploader(transport: transport).upload(
            BlobInputStream(dataSource: MemoryDataSource(data: Data(body))), to: url, expectedLength: Int64(body.count))
        #expect(response.statusCode == 303)
        #expect(response.headers["location"] == "/stored/object")
        #expect(response.bytesSent == Int64(body.count))
        #expect(server.parsedRequests.map(\.target) == ["/object"], "the result is not fetched, the body not sent again")
        #expect(server.parsedRequests.first?.raw.hasPrefix("PUT ") == true)
    }
}
