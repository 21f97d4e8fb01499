import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// What a tus server's answers may claim, from scripted servers: bytes a PATCH never sent or
/// that the server discarded, an upload without the length it was created with, a refused
/// OPTIONS, a size past `Tus-Max-Size` on a restart. None ends in an upload reported complete,
/// nor in an error that names another cause.
@Suite struct TusServerClaimsTests {
    static let length: Int64 = 1000

    /// The upload of ``length`` bytes against `server`, and how it ended.
    static func upload(
        _ server: ScriptedHTTPServer, options: TusUploadOptions = ScriptedTus.options(chunkSize: 4096), resuming: URL? = nil
    ) async -> Result<TusUploadResult, BlobUploadError> {
        do throws(BlobUploadError) {
            return .success(try await TusClient(endpoint: ScriptedTus.endpoint(server))
                .upload(ScriptedTus.source(Int(length)), resuming: resuming, options: options))
        } catch {
            return .failure(error)
        }
    }

    /// A PATCH whose connection was never made sent nothing: a HEAD that then claims the whole
    /// upload claims bytes it never received. The server here stops listening as it answers the
    /// creation, and listens again once the client has retried.
    @Test func aPatchThatNeverConnectedSentNothing() async throws {
        let peer = try PythonTusPeer(length: Self.length)
        defer { peer.stop() }
        var options = ScriptedTus.options(chunkSize: 4096)
        options.retry.initialDelay = 0.2
        let endpoint = URL(string: "http://\(peer.address):\(peer.port)/files/")!
        let outcome: Result<TusUploadResult, BlobUploadError>
        do throws(BlobUploadError) {
            outcome = .success(try await TusClient(endpoint: endpoint).upload(ScriptedTus.source(Int(Self.length)), options: options) { event in
                if case .retrying = event { peer.listenAgain() }
            })
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(.protocolViolation(.tus(method: "HEAD"), _, let reason)) = outcome else {
            Issue.record("not a violation of the HEAD: \(outcome)")
            return
        }
        #expect(reason.contains("Upload-Offset 1000") && reason.contains("only 0 bytes"), "\(reason)")
    }

    /// A 460 says the server discarded the chunk: a HEAD that then claims it is no success.
    @Test func aHeadThatClaimsAChunkRefusedForItsChecksumIsRefused() async throws {
        let options = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\n"
            + "Tus-Extension: creation,checksum\r\nTus-Checksum-Algorithm: sha1\r\n\r\n"
        let mismatch = "HTTP/1.1 460 Checksum Mismatch\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[
            options, ScriptedTus.created("/files/a"), mismatch, ScriptedTus.head(offset: Self.length, length: Self.length),
        ]])
        defer { server.stop() }
        var settings = ScriptedTus.options(chunkSize: 4096)
        settings.checksum = .automatic
        guard case .failure(.protocolViolation(.tus(method: "HEAD"), _, _)) = await Self.upload(server, options: settings) else {
            Issue.record("the chunk the server refused was taken as stored")
            return
        }
    }

    /// An upload created with its length that a HEAD shows without one is not this upload, and
    /// the server would never finish it.
    @Test func aHeadWithoutTheLengthTheUploadWasCreatedWithIsRefused() async throws {
        let unavailable = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
        let deferred = "HTTP/1.1 200 OK\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nUpload-Defer-Length: 1\r\n"
            + "Cache-Control: no-store\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[
            ScriptedTus.options, ScriptedTus.created("/files/a"), unavailable, deferred, ScriptedTus.patched(Self.length),
        ]])
        defer { server.stop() }
        let outcome = await Self.upload(server)
        guard case .failure(.lengthMismatch(_, nil, Self.length)) = outcome else {
            Issue.record("not a length mismatch: \(outcome)")
            return
        }
    }

    /// An OPTIONS refused for its credentials is that refusal, not a server without extensions
    /// (which live data would then be reported to need).
    @Test(arguments: [401, 403, 407])
    func aRefusedOptionsIsTheRefusal(status: Int) async throws {
        let server = try ScriptedHTTPServer(connections: [["HTTP/1.1 \(status) No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"]])
        defer { server.stop() }
        let live = UploadSource.live(name: "live", AsyncStream<Data> { continuation in
            continuation.yield(Data(count: 10))
            continuation.finish()
        })
        let outcome: Result<TusUploadResult, BlobUploadError>
        do throws(BlobUploadError) {
            outcome = .success(try await TusClient(endpoint: ScriptedTus.endpoint(server)).upload(live, options: ScriptedTus.options(chunkSize: 4096)))
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(.httpStatus("OPTIONS", _, status, _)) = outcome else {
            Issue.record("not the OPTIONS refusal: \(outcome)")
            return
        }
    }

    /// A resumed upload that is gone is started over only within the server's `Tus-Max-Size`,
    /// as a new one is: refused before a POST.
    @Test func aRestartPastTheMaximumSizeIsRefusedBeforeItsCreation() async throws {
        let options = "HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\n"
            + "Tus-Extension: creation\r\nTus-Max-Size: 500\r\n\r\n"
        let gone = "HTTP/1.1 404 Not Found\r\nTus-Resumable: 1.0.0\r\nContent-Length: 0\r\n\r\n"
        let server = try ScriptedHTTPServer(connections: [[options, gone]])
        defer { server.stop() }
        var settings = ScriptedTus.options(chunkSize: 4096)
        settings.restartIfGone = true
        let outcome = await Self.upload(server, options: settings, resuming: URL(string: "http://127.0.0.1:\(server.port)/files/old")!)
        guard case .failure(.tooLarge(_, Self.length, 500)) = outcome else {
            Issue.record("not refused as too large: \(outcome)")
            return
        }
        #expect(!server.requests.contains { $0.hasPrefix("POST") })
    }
}

/// A tus server in Python that answers OPTIONS and the creation, stops listening as it answers
/// the creation (a PATCH is then refused a connection) and listens again on the same port once
/// told (``listenAgain()``), to answer every later request: a HEAD claiming all `length` bytes,
/// a PATCH confirming them. It listens on a loopback address of its own, where no other test's
/// listener can take the port while it is closed.
final class PythonTusPeer: Sendable {
    let address = LoopbackAddress.random().text
    private let peer: PythonPeer
    var port: Int { peer.port }

    init(length: Int64) throws {
        peer = try PythonPeer(program: Self.program, arguments: [String(length), address])
    }

    /// Lets the peer listen again; later calls change nothing.
    func listenAgain() { peer.tell("go") }

    func stop() { peer.stop() }

    private static let program = #"""
import socket, sys, time
length = int(sys.argv[1])
address = sys.argv[2]
def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(8)
    return s
def serve(s):
    c, _ = s.accept()
    data = b""
    while b"\r\n\r\n" not in data:
        more = c.recv(65536)
        if not more: break
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    size = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length": size = int(value)
    while len(rest) < size:
        more = c.recv(65536)
        if not more: break
        rest += more
    method = head.split(b" ")[0]
    if method == b"OPTIONS":
        answer = b"HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nTus-Version: 1.0.0\r\nTus-Extension: creation\r\n"
    elif method == b"POST":
        answer = b"HTTP/1.1 201 Created\r\nTus-Resumable: 1.0.0\r\nLocation: /files/a\r\nContent-Length: 0\r\n"
    elif method == b"HEAD":
        answer = b"HTTP/1.1 200 OK\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: %d\r\nUpload-Length: %d\r\nCache-Control: no-store\r\nContent-Length: 0\r\n" % (length, length)
    else:
        answer = b"HTTP/1.1 204 No Content\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: %d\r\n" % length
    if method == b"POST": s.close()
    c.sendall(answer + b"Connection: close\r\n\r\n")
    c.close()
    return method
s = listener(0)
port = s.getsockname()[1]
print(port, flush=True)
while serve(s) != b"POST": pass
sys.stdin.readline()
s = listener(port)
while True: serve(s)
"""#
}
