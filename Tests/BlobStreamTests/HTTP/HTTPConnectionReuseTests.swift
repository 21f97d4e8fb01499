import BlobStream
import BlobTestSupport
import Foundation
import Testing

/// A connection goes back to the process's pool only when its next bytes are an HTTP/1.1
/// answer to the next request: what one source leaves on it never lands on the next user.
@Suite struct HTTPConnectionReuseTests {
    /// After `101 Switching Protocols` (never asked for) the connection speaks another protocol:
    /// the source fails with the status, and the next source gets a fresh connection.
    @Test func aSwitchedConnectionIsNeverReused() async throws {
        let switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        let blob = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/10\r\nContent-Length: 10\r\nETag: \"e\"\r\n\r\n0123456789"
        let server = try ScriptedHTTPServer(connections: [[switched, "\u{1}\u{2}not http at all\r\n\r\n"], [blob]])
        defer { server.stop() }
        let port = server.port
        let (first, second) = try await blocking { () -> (BlobStreamError?, Result<[UInt8], BlobStreamError>) in
            let a = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/a")!, configuration: .init(maxRetries: 0))
            let opened = try SourceReader(source: a, timeout: 30).open()
            a.close()
            let b = HTTPDataSource(url: URL(string: "http://127.0.0.1:\(port)/b")!, configuration: .init(maxRetries: 0))
            defer { b.close() }
            let reader = SourceReader(source: b, timeout: 30)
            if case .failure(let error) = try reader.open() { return (opened.failure, .failure(error)) }
            return (opened.failure, try reader.readToEnd())
        }
        #expect(first == .httpStatus(url: "http://127.0.0.1:\(port)/a", statusCode: 101))
        #expect(try second.get() == Array("0123456789".utf8))
        #expect(server.connectionCount == 2)
    }
}

