import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import SystemCalls
import Testing

/// The streamed PUT's header provider: asked before the request, and once more after a 401,
/// when the body can be read again.
@Suite struct StreamedHeaderProviderTests {
    static let refused = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    static let created = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    @Test func aRefusedPutOfASourceIsSentAgainWithRenewedFields() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.refused], [Self.created]], readsChunkedBodies: true)
        defer { server.stop() }
        let asked = LockedValue<[Int?]>([])
        let uploader = StreamedUploader(headerProvider: { request in
            let count = asked.withLock { $0.append(request.refusedStatus); return $0.count }
            return ["Authorization": "Bearer token-\(count)"]
        })
        let body = Data("the body".utf8)
        let source = UploadSource.dataSource(name: "memory", length: Int64(body.count)) { MemoryDataSource(data: body) }

        let response = try await uploader.upload(source, to: URL(string: "http://127.0.0.1:\(server.port)/put")!)

        #expect(response.statusCode == 201)
        #expect(asked.withLock { $0 } == [nil, 401])
        let requests = server.requests
        try #require(requests.count == 2)
        #expect(requests[0].contains("Authorization: Bearer token-1\r\n"))
        #expect(requests[1].contains("Authorization: Bearer token-2\r\n"))
        #expect(requests[1].contains("the body"), "the whole body was sent again")
    }

    @Test func aSecondRefusalIsTheAnswer() async throws {
        let server = try ScriptedHTTPServer(connections: [[Self.refused], [Self.refused]], readsChunkedBodies: true)
        defer { server.stop() }
        let uploader = StreamedUploader(headerProvider: { _ in ["Authorization": "Bearer stale"] })
        let source = UploadSource.dataSource(name: "memory", length: 4) { MemoryDataSource(data: Data("abcd".utf8)) }
        await #expect {
            _ = try await uploader.upload(source, to: URL(string: "http://127.0.0.1:\(server.port)/put")!)
        } throws: { error in
            guard case BlobUploadError.httpStatus("PUT", _, 401, _) = error else { return false }
            return true
        }
        #expect(server.requests.count == 2)
    }
}
