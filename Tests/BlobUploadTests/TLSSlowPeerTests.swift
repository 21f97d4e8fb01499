import BlobStream
import BlobTestSupport
import BlobUpload
import Foundation
import Testing

/// A TLS peer that reads the request body slowly, so the client's socket is full again and
/// again in the middle of its gathered records (the TLS layer's send buffer then holds
/// encrypted bytes while the caller waits): the body arrives whole and in order. The peer is
/// Python's `ssl` with the test servers' certificate; it answers with the SHA-256 of the
/// body it read (by `Content-Length`, or chunked).
@Suite struct TLSSlowPeerTests {
    private static let program = #"""
import hashlib, socket, ssl, sys, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
print(listener.getsockname()[1], flush=True)
raw, _ = listener.accept()
# A small receive buffer, so the client's sends stop often.
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
conn = context.wrap_socket(raw, server_side=True)
data, received = b"", 0
def more():
    global data, received
    piece = conn.recv(4096)
    if not piece: raise SystemExit("the client closed the connection early")
    received += len(piece)
    if received < 3 << 20: time.sleep(0.0005)
    data += piece
while b"\r\n\r\n" not in data: more()
head, data = data.split(b"\r\n\r\n", 1)
fields = dict(l.split(b":", 1) for l in head.lower().split(b"\r\n")[1:])
digest = hashlib.sha256()
if b"content-length" in fields:
    length = int(fields[b"content-length"])
    while len(data) < length: more()
    digest.update(data[:length])
else:
    while True:
        while b"\r\n" not in data: more()
        line, data = data.split(b"\r\n", 1)
        size = int(line.split(b";")[0], 16)
        while len(data) < size + 2: more()
        digest.update(data[:size])
        data = data[size + 2:]
        if size == 0: break
body = digest.hexdigest().encode()
conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
conn.close()
"""#

    /// With a declared length (`Content-Length`) and without (chunked).
    @Test(arguments: [true, false]) func aBodyToAPeerThatReadsSlowlyArrivesWhole(declaresLength: Bool) async throws {
        let peer = try PythonPeer.tls(program: Self.program)
        defer { peer.stop() }
        let port = peer.port
        let size = 6 * 1024 * 1024 + 321
        let path = try makeRandomFile(size: size, seed: 211)
        defer { TempFiles.remove(path) }
        let transport = Transport.automatic.trusting(.certificateAuthorities(file: TestServers.tlsCAPath))
        let response = try await StreamedUploader(transport: transport).upload(
            BlobInputStream(fileAtPath: path), to: URL(string: "https://127.0.0.1:\(port)/slow.bin")!, expectedLength: declaresLength ? Int64(size) : nil)
        #expect(response.statusCode == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == (try TempFiles.sha256(ofFileAtPath: path)))
    }

    /// A peer that sends one whole TLS record (16 KiB) slowly, as its raw bytes trickle in.
    private static let tricklingProgram = #"""
import socket, ssl, sys, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
rate, size = int(sys.argv[3]), int(sys.argv[4])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
print(listener.getsockname()[1], flush=True)
raw, _ = listener.accept()
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
session = context.wrap_bio(incoming, outgoing, server_side=True)
def flush():
    data = outgoing.read()
    if data: raw.sendall(data)
def pull():
    data = raw.recv(65536)
    if not data: raise SystemExit("the client closed the connection early")
    incoming.write(data)
while True:
    try:
        session.do_handshake()
        break
    except ssl.SSLWantReadError:
        flush()
        pull()
flush()
request = b""
while b"\r\n\r\n" not in request:
    try:
        request += session.read(65536)
    except ssl.SSLWantReadError:
        flush()
        pull()
session.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
flush()
session.write(bytes(size))
wire = outgoing.read()
step = max(1, rate // 10)
for start in range(0, len(wire), step):
    raw.sendall(wire[start:start + step])
    time.sleep(0.1)
time.sleep(1)
raw.close()
"""#

    /// A download over TLS is paced by the bytes off the wire, as a plain one is: a peer that
    /// trickles above the minimum speed completes a 16 KiB record only every few seconds, and
    /// counting decrypted bytes alone failed it as too slow.
    @Test func aTricklingTLSDownloadAboveTheMinimumSpeedIsNotTooSlow() async throws {
        let size = 20_000
        let peer = try PythonPeer.tls(program: Self.tricklingProgram, arguments: ["4000", String(size)])
        defer { peer.stop() }
        let url = URL(string: "https://127.0.0.1:\(peer.port)/trickle.bin")!
        let source = HTTPDataSource(url: url, configuration: .init(
            minimumSpeed: MinimumSpeed(bytesPerSecond: 2500, seconds: 2), maxRetries: 0,
            transport: Transport.automatic.trusting(.certificateAuthorities(file: TestServers.tlsCAPath))))
        let bytes = try await Task.detached { try StreamHarness.readAll(BlobInputStream(dataSource: source)) }.value
        #expect(bytes == [UInt8](repeating: 0, count: size))
    }

    /// A TLS 1.3 server that requires a client certificate refuses after the handshake, with an
    /// alert on the first read: a refusal, final as one during the handshake is, not a lost
    /// connection retried five times.
    @Test func aRefusalAfterTheHandshakeIsNotRetried() async throws {
        let program = #"""
import socket, ssl, sys
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
context.load_verify_locations(sys.argv[3])
context.verify_mode = ssl.CERT_REQUIRED
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
print(listener.getsockname()[1], flush=True)
while True:
    raw, _ = listener.accept()
    try:
        conn = context.wrap_socket(raw, server_side=True)
        conn.recv(4096)
    except Exception:
        pass
    raw.close()
"""#
        let peer = try PythonPeer.tls(program: program, arguments: [TestServers.tlsCAPath])
        defer { peer.stop() }
        let url = URL(string: "https://127.0.0.1:\(peer.port)/private.bin")!
        let source = HTTPDataSource(url: url, configuration: .init(
            maxRetries: 3, retryDelay: 0.01,
            transport: Transport.automatic.trusting(.certificateAuthorities(file: TestServers.tlsCAPath))))
        let outcome = await Task.detached { Result { try StreamHarness.readAll(BlobInputStream(dataSource: source)) } }.value
        guard case .failure(let error) = outcome else {
            Issue.record("read \(outcome) from a server that refuses every client")
            return
        }
        #expect("\(error)".contains("certificate required"), "\(error)")
        #expect(!"\(error)".contains("attempts"), "\(error)")
    }
}
