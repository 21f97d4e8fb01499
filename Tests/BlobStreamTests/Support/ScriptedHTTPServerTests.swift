import BlobTestSupport
import Foundation
import Glibc
import SystemCalls
import Testing

/// ``ScriptedHTTPServer/wasReached``, which the "nothing may reach this server" tests assert:
/// a stray client asking for its own path does not count, this test's request and a silent
/// connection do.
@Suite struct ScriptedHTTPServerTests {
    /// Connects to `address`:`port`, sends `text` (nothing when empty), and waits for the server
    /// to close.
    private func visit(_ address: LoopbackAddress = .standard, port: UInt16, sending text: String) throws {
        let fd: Int32
        switch LoopbackSocket.connect(to: address, port: port, timeout: 5) {
        case .success(let connected): fd = connected
        case .failure(let error): throw TestSupportError("connect: \(error.text)")
        }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        if text.isEmpty {
            shutdown(fd, Int32(SHUT_WR))
        } else {
            _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) > 0 {}
    }

    private func server(address: LoopbackAddress = .standard) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer(address: address) { _ in ScriptedHTTPServer.response(status: "204 No Content") }
    }

    @Test func aRequestForAnotherPathDoesNotCount() throws {
        let server = try server()
        try visit(port: server.port, sending: "GET /files/someone-else HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.connectionCount == 1)
        #expect(!server.wasReached)
    }

    @Test func aRequestForItsOwnURLCounts() throws {
        let server = try server()
        let target = server.url("/files/a").path
        try visit(port: server.port, sending: "GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.wasReached)
    }

    @Test func aConnectionThatSendsNothingCounts() throws {
        let server = try server()
        try visit(port: server.port, sending: "")
        #expect(server.wasReached)
    }

    /// The servers that nothing may reach listen on an address of their own: their URL leads there.
    @Test func aServerOnAnAddressOfItsOwnIsReachedThroughItsURL() throws {
        let address = LoopbackAddress.random()
        let server = try server(address: address)
        let url = server.url("/files/b")
        #expect(url.host == address.text)
        #expect(!server.wasReached)
        try visit(address, port: server.port, sending: "GET \(url.path) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(server.wasReached)
        #expect(server.parsedRequests.map(\.target) == [url.path])
    }
}
