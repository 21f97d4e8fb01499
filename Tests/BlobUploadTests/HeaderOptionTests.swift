import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Glibc
import Testing

/// `-H`/`--header` on the commands that send HTTP requests: the fields reach the server they
/// are meant for and no other origin; a field with a line break or NUL, or one the protocol
/// owns, is a usage error before anything is sent.
@Suite struct HeaderOptionTests {
    func blobstream(_ arguments: [String]) async throws -> ToolProcess.Result {
        try await ToolProcess.execute(ToolProcess.blobstream(), arguments)
    }

    /// A listener the command must never reach, on a loopback address of its own: another
    /// test's client still retrying a port of 127.0.0.1 that the kernel has since handed out
    /// cannot reach it. Any connection counts, but one whose request names another path.
    final class Untouched {
        let fd: Int32
        let url: String
        private let token = UUID().uuidString
        init(path: String = "/files/") throws {
            // An address of its own: no other test's client can reach it (see `LoopbackAddress.random`).
            let address = LoopbackAddress.random()
            let (fd, port) = try LoopbackSocket.listening(on: address)
            // A descriptor number no other part of the process has had: a test that closes a
            // number twice cannot close this listener and hand the number to a connected socket,
            // whose data the check would take for the command's.
            let high = fcntl(fd, F_DUPFD_CLOEXEC, Int32.random(in: 10_000..<15_000))
            if high >= 0 { close(fd) }
            self.fd = high >= 0 ? high : fd
            url = "http://\(address.text):\(port)/\(token)\(path)"
        }
        /// What of the command reached the listener (the kernel completes connects on its own):
        /// `nil` for nothing, else what came.
        var contact: String? {
            var listening = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&listening, 1, 100) == 1 {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return "a connection that could not be accepted" }
                defer { close(connection) }
                var waiting = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                var bytes = [UInt8](repeating: 0, count: 4096)
                let count = poll(&waiting, 1, 500) == 1 ? recv(connection, &bytes, bytes.count, 0) : 0
                if count <= 0 { return "a connection that sent nothing (recv \(count))" }
                let text = String(decoding: bytes[0..<count], as: UTF8.self)
                if text.contains(token) { return "a request: \(text.prefix(200))" }
            }
            return nil
        }
        deinit { close(fd) }
    }

    static let owned: [(command: [String], header: String)] = [
        (["upload", "/etc/hostname"], "Upload-Offset: 5"),
        (["upload", "/etc/hostname"], "upload-length: 5"),
        (["upload", "/etc/hostname"], "Tus-Resumable: 0.2"),
        (["upload", "/etc/hostname"], "Content-Length: 1"),
        (["upload", "/etc/hostname"], "Transfer-Encoding: chunked"),
        (["upload", "/etc/hostname"], "Host: elsewhere"),
        (["put", "/etc/hostname"], "Content-Length: 1"),
        (["put", "/etc/hostname"], "Transfer-Encoding: identity"),
        (["put", "/etc/hostname"], "HOST: elsewhere"),
        (["cat"], "Range: bytes=0-1"),
        (["cat"], "Host: elsewhere"),
        (["checksum"], "Range: bytes=0-1"),
    ]

    @Test(arguments: owned)
    func aFieldTheProtocolOwnsIsAUsageErrorAndNothingIsSent(command: [String], header: String) async throws {
        let target = try Untouched()
        let result = try await blobstream(command + ["-H", header, target.url])
        #expect(result.status == 64, "\(command) -H \(header): \(result.standardError)")
        #expect(result.standardError.contains("protocol sets this header"))
        #expect(result.standardOutput.isEmpty)
        #expect(target.contact == nil, "nothing was sent")
    }

    // (A NUL cannot reach a command: an argument ends at it.)
    @Test(arguments: ["X-Token: a\r\nEvil: 1", "X-Token: a\nb", "X-Token: a\rb", "No colon", ": empty name", "Bad Name: x"])
    func anUnusableFieldIsAUsageErrorAndNothingIsSent(header: String) async throws {
        for command in [["upload", "/etc/hostname"], ["put", "/etc/hostname"], ["cat"]] {
            let target = try Untouched()
            let result = try await blobstream(command + ["--header", header, target.url])
            #expect(result.status == 64, "\(command): \(result.standardError)")
            let contact = target.contact
            #expect(contact == nil, "\(command) sent nothing: \(contact ?? "")")
        }
    }

    @Test func catSendsTheFieldsToItsOriginOnly() async throws {
        let other = try ScriptedHTTPServer(connections: [["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"]])
        defer { other.stop() }
        let redirect = "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:\(other.port)/b\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let first = try ScriptedHTTPServer(connections: [[redirect]])
        defer { first.stop() }

        let result = try await blobstream(
            ["cat", "-H", "X-Token: s3cret", "-H", "Authorization: Bearer t0ken", "http://127.0.0.1:\(first.port)/a"])

        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "hello")
        #expect(first.requests.first?.contains("X-Token: s3cret\r\n") == true, "\(first.requests)")
        #expect(first.requests.first?.contains("Authorization: Bearer t0ken\r\n") == true)
        #expect(other.requests.count == 1)
        #expect(other.requests.allSatisfy { !$0.contains("s3cret") && !$0.contains("t0ken") }, "\(other.requests)")
    }

    @Test func putSendsTheFields() async throws {
        let server = try ScriptedHTTPServer(
            connections: [["HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"]], readsChunkedBodies: true)
        defer { server.stop() }

        let result = try await blobstream(
            ["put", "-H", "Content-Type: text/plain", "--header", "X-Api-Key: k0", "-H", "x-api-key:  k1 ", "/etc/hostname",
             "http://127.0.0.1:\(server.port)/x"])

        #expect(result.status == 0, "\(result.standardError)")
        let request = try #require(server.requests.first)
        #expect(request.contains("Content-Type: text/plain\r\n"))
        #expect(request.contains("x-api-key: k1\r\n"), "the later field wins, without the blanks around its value")
        #expect(!request.contains("k0"))
    }

    @Test func uploadAuthenticatesWithTheField() async throws {
        let server = try await TusServerProcess.start(tokenUses: 1000)
        defer { server.stop() }
        let token = await TokenSource(server: server).token(renewing: false)
        let path = try makeRandomFile(size: 300_000, seed: 91)
        defer { TempFiles.remove(path) }

        let refused = try await blobstream(["upload", path, server.filesURL.absoluteString])
        #expect(refused.status == 1)
        #expect(refused.standardError.contains("401"), "\(refused.standardError)")

        let result = try await blobstream(["upload", "-H", "Authorization: Bearer \(token)", path, server.filesURL.absoluteString])
        #expect(result.status == 0, "\(result.standardError)")
        let uploadURL = try #require(URL(string: result.standardOutput.split(separator: "\n").last.map(String.init) ?? ""))
        #expect(try tusStoredCopyMatches(uploadURL, file: path, dataRoot: server.dataDirectory))
    }
}
