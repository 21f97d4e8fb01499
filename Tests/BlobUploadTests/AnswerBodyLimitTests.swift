@testable import BlobUpload
import Foundation
import BlobTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTP1
import Testing

/// An answer's body is kept up to the same bound on both transports: a server cannot make an
/// upload client hold more than ``HTTPReply/maxKeptBody`` of an error page, whichever way the
/// request went.
@Suite struct AnswerBodyLimitTests {
    private static let bodySize = 3 << 20

    private func hugeAnswerServer() throws -> ScriptedHTTPServer {
        let body = String(repeating: "x", count: Self.bodySize)
        return try ScriptedHTTPServer(connections: [[
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: \(Self.bodySize)\r\nConnection: close\r\n\r\n" + body,
        ]])
    }

    @Test func theSocketTransportKeepsAtMostTheBound() async throws {
        let server = try hugeAnswerServer()
        let url = URL(string: "http://127.0.0.1:\(server.port)/files/a")!
        let reply = try await SocketHTTPTransport(timeout: 10).send(HTTPRequestHead(method: "GET", url: url, fields: []), body: nil)
        #expect(reply.statusCode == 500)
        #expect(reply.body.count == HTTPReply.maxKeptBody)
    }

    @Test func theURLSessionTransportKeepsAtMostTheBound() async throws {
        let server = try hugeAnswerServer()
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/files/a")!)
        request.httpMethod = "GET"
        let reply = try await URLSessionUploadTransport(configuration: URLSessionUploadTransport.defaultConfiguration()).send(request, body: .none, as: .tus(method: "GET"))
        #expect(reply.statusCode == 500)
        #expect(reply.body.count == HTTPReply.maxKeptBody)
    }
}
