@testable import BlobUpload
import BlobStream
import BlobTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Caller header fields that would end a field early or parse as another one are refused
/// before anything is sent, on every transport.
@Suite struct HeaderInjectionTests {
    static let cases: [(name: String, value: String)] = [
        ("X-Note", "a\r\nInjected: 1"),
        ("X-Note", "a\nb"),
        ("X-Note", "a\0b"),
        ("X-Bad: Name", "v"),
        ("X Bad", "v"),
        ("X-Bad\r\nInjected", "v"),
        ("", "v"),
    ]

    /// Over the socket transport, which would write the fields verbatim.
    @Test(arguments: cases)
    func theTusClientSendsNothing(name: String, value: String) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 204 No Content\r\n\r\n"]], address: .random())
        let endpoint = server.url("/files/")
        let upload = endpoint.appendingPathComponent("x")
        for client in [TusClient(endpoint: endpoint, headers: [name: value]), TusClient(endpoint: endpoint)] {
            await #expect {
                _ = try await client.status(of: upload, headers: client.headers.isEmpty ? [name: value] : [:])
            } throws: { error in
                guard case .invalidHeader(name, _)? = error as? BlobUploadError else { return false }
                return true
            }
        }
        #expect(!server.wasReached)
    }

    /// A caller's field of a name the tus protocol sets, in any case, would go out beside the
    /// protocol's own (`upload-offset` next to `Upload-Offset`): refused from the client's
    /// headers, a call's and an upload's, before anything is sent.
    @Test(arguments: ["upload-offset", "TUS-RESUMABLE", "content-type", "Transfer-Encoding", "te", "Upgrade"])
    func aFieldTheTusProtocolSetsIsRefused(name: String) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 204 No Content\r\n\r\n"]], address: .random())
        let endpoint = server.url("/files/")
        let refused: (any Error) -> Bool = { error in
            guard case .invalidHeader(name, let reason)? = error as? BlobUploadError else { return false }
            return reason.hasSuffix("may not set it: the tus protocol does")
        }
        await #expect { _ = try await TusClient(endpoint: endpoint, headers: [name: "1"]).discover() } throws: { refused($0) }
        await #expect { _ = try await TusClient(endpoint: endpoint).status(of: endpoint.appendingPathComponent("x"), headers: [name: "1"]) } throws: { refused($0) }
        var options = TusUploadOptions()
        options.headers = [name: "1"]
        let source = UploadSource.streams(name: "owned", length: 3) { InputStream(data: Data("abc".utf8)) }
        await #expect { _ = try await TusClient(endpoint: endpoint).upload(source, options: options) } throws: { refused($0) }
        #expect(!server.wasReached)
    }

    /// `URLRequest` keeps a name that is no token; the socket transport itself refuses it.
    @Test(arguments: ["X-Bad: Name", "X Bad"])
    func theSocketTransportRefusesANameThatIsNoToken(name: String) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 204 No Content\r\n\r\n"]], address: .random())
        var request = URLRequest(url: server.url("/files/x"))
        request.httpMethod = "PATCH"
        request.setValue("v", forHTTPHeaderField: name)
        await #expect {
            let head = try HeaderFieldCheck.head(method: "PATCH", url: request.url!, fields: request.allHTTPHeaderFields ?? [:])
            _ = try await SocketHTTPTransport(timeout: 5).send(head, body: Data("abc".utf8))
        } throws: { error in
            guard case .invalidHeader(name, _)? = error as? BlobUploadError else { return false }
            return true
        }
        #expect(!server.wasReached)
    }

    @Test func theTusClientRefusesItWithoutRetrying() async throws {
        try TestServers.requireTus()
        var options = TusUploadOptions()
        options.headers = ["Authorization": "Bearer x\r\nX-Injected: 1"]
        let log = EventLog<TusUploadEvent>()
        defer { TestServers.removeUploads(log.createdURLs) }
        let source = UploadSource.streams(name: "injected", length: 3) { InputStream(data: Data("abc".utf8)) }
        await #expect {
            _ = try await TusClient(endpoint: TestServers.tusFilesURL).upload(source, options: options) { log.append($0) }
        } throws: { error in
            guard case .invalidHeader("Authorization", _)? = error as? BlobUploadError else { return false }
            return true
        }
        #expect(log.retriedErrors.isEmpty)
        #expect(log.createdURLs.isEmpty)
    }

    @Test func theStreamedUploaderRefusesIt() async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"]], address: .random())
        let target = server.url("/upload/x.bin")
        await #expect {
            _ = try await StreamedUploader().upload(
                InputStream(data: Data("abc".utf8)), to: target, headers: ["Content-Type": "text/plain\r\nX-Injected: 1"])
        } throws: { error in
            guard case .invalidHeader("Content-Type", _)? = error as? BlobUploadError else { return false }
            return true
        }
        #expect(!server.wasReached)
    }
}

/// A caller's method is written into the request line verbatim: one that is not an HTTP token
/// could end the line and inject fields or a second request, so it is refused before anything
/// is sent, on both transports.
@Suite struct MethodInjectionTests {
    @Test(arguments: [Transport.automatic, .urlSession],
          ["PUT /other HTTP/1.1\r\nX-Injected: yes\r\nX-Pad:", "PUT\n", "PU T", ""])
    func theStreamedUploaderRefusesAMethodThatIsNoToken(transport: Transport, method: String) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"]], address: .random())
        let target = server.url("/upload/x.bin")
        await #expect {
            _ = try await StreamedUploader(transport: transport).upload(InputStream(data: Data("abc".utf8)), to: target, method: method)
        } throws: { error in
            guard case .invalidOption("method", _)? = error as? BlobUploadError else {
                Issue.record("expected invalidOption(method), got \(error)")
                return false
            }
            return true
        }
        #expect(!server.wasReached)
    }
}
