import BlobStream
@testable import BlobUpload
import Foundation
import Testing
import BlobTestSupport

/// Redirects of the tus requests without a body (OPTIONS, HEAD, DELETE, and the creation POST,
/// whose body is empty) are handled alike on both transports: followed within the endpoint's
/// origin, refused towards another one, so the caller's header fields never leave the origin.
@Suite struct TusRedirectTests {
    private static let credentials = ["Authorization": "Bearer secret"]

    /// A redirect that also closes the connection, so that either transport must open a new one
    /// for the next request and the script knows which connection gets it.
    private static func redirect(_ location: String) -> String {
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aRedirectWithinTheOriginIsFollowed(transport: TusClient.Transport) async throws {
        let server = try ScriptedHTTPServer(connections: [
            [Self.redirect("/files/moved")], [ScriptedTus.head(offset: 7, length: 10)],
        ])
        let client = TusClient(endpoint: ScriptedTus.endpoint(server), headers: Self.credentials, transport: transport)
        let status = try await client.status(of: ScriptedTus.endpoint(server).appendingPathComponent("a"))
        #expect(status.offset == 7)
        let requests = server.requests
        #expect(requests.count == 2)
        #expect(requests.last?.hasPrefix("HEAD /files/moved HTTP/1.1\r\n") == true)
        #expect(requests.last?.contains("Authorization: Bearer secret\r\n") == true)
    }

    @Test(arguments: [TusClient.Transport.automatic, .urlSession])
    func aRedirectToAnotherOriginIsRefused(transport: TusClient.Transport) async throws {
        let other = try ScriptedHTTPServer(connections: [[ScriptedTus.options], [ScriptedTus.head(offset: 0, length: 10)]], address: .random())
        let foreign = other.url("/files/b").absoluteString
        let endpoint = try ScriptedHTTPServer(connections: [[Self.redirect(foreign)], [Self.redirect(foreign)]])
        let client = TusClient(endpoint: ScriptedTus.endpoint(endpoint), headers: Self.credentials, transport: transport)
        func isRefusal(_ error: any Error) -> Bool {
            guard case .crossOriginRefused(_, let url, let allowed)? = error as? BlobUploadError else { return false }
            return url == foreign && allowed == "http://127.0.0.1:\(endpoint.port)"
        }
        await #expect { _ = try await client.discover() } throws: { isRefusal($0) }
        await #expect {
            _ = try await client.status(of: ScriptedTus.endpoint(endpoint).appendingPathComponent("a"))
        } throws: { isRefusal($0) }
        #expect(!other.wasReached)
    }
}
