import BlobStream
import BlobTestSupport
@testable import BlobUpload
import Foundation
import Glibc
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

    /// An interim answer while the body goes out (an unasked-for `100 Continue`) ends nothing
    /// (RFC 9110 §15.2): the body is sent whole and the final answer is the upload's.
    @Test func anInterimAnswerWhileTheBodyGoesOutIsSkipped() async throws {
        let (listener, port) = try LoopbackSocket.listening()
        let length = 8 << 20
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { close(listener); done.signal() }
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 20_000) == 1 else { return }
            let peer = accept(listener, nil, nil)
            guard peer >= 0 else { return }
            defer { close(peer) }
            var received = 0
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var head: [UInt8] = []
            while head.suffix(4) != [13, 10, 13, 10] {
                guard recv(peer, &buffer, 1, 0) == 1 else { return }
                head.append(buffer[0])
            }
            _ = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8).withUnsafeBytes { send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            while received < length {
                let count = recv(peer, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                received += count
            }
            _ = Array("HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                .withUnsafeBytes { send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        let url = URL(string: "http://127.0.0.1:\(port)/object")!
        let response = try await StreamedUploader(transport: .automatic).upload(
            BlobInputStream(dataSource: MemoryDataSource(data: Data(count: length))), to: url, expectedLength: Int64(length))
        #expect(response.statusCode == 201)
        #expect(response.bytesSent == Int64(length))
        done.wait()
    }

    /// A server that closes while the body goes out, without an answer, is a lost connection
    /// (seen as the close, or as the broken send that follows it), not an answer.
    @Test func aCloseWhileTheBodyGoesOutIsNoAnswer() async throws {
        let server = try ScriptedHTTPServer(connections: [[]], readsBodies: false)
        defer { server.stop() }
        let url = URL(string: "http://127.0.0.1:\(server.port)/object")!
        let error = await #expect(throws: BlobUploadError.self) {
            _ = try await StreamedUploader(transport: .automatic).upload(
                BlobInputStream(dataSource: MemoryDataSource(data: Data(count: 8 << 20))), to: url, expectedLength: 8 << 20)
        }
        guard case .network(_, _, let reason, URLError.Code.networkConnectionLost.rawValue)? = error else {
            Issue.record("expected a lost connection, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("without an answer") || reason.contains("Broken pipe") || reason.contains("reset"), "\(reason)")
    }
}
