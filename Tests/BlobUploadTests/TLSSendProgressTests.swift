import BlobTestSupport
import Foundation
import HTTP1
import Testing

/// A TLS send to a peer that reads at a steady 64 KiB/s counts as progress record by record,
/// as a plain send does send by send: the TLS layer gathers up to 256 KiB of records per
/// `send`, and counting only whole batches left 3–4 s without progress here, which a minimum
/// speed (a silence of 1.5 s) took for a stalled peer. The client's socket has a 64 KiB send
/// buffer, as on a slow link (on loopback the kernel grows it past the whole body).
@Suite struct TLSSendProgressTests {
    private static let program = #"""
import socket, ssl, sys, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
total = int(sys.argv[3])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
print(listener.getsockname()[1], flush=True)
raw, _ = listener.accept()
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
conn = context.wrap_socket(raw, server_side=True)
received, start = 0, time.monotonic()
while received < total:
    piece = conn.recv(4096)
    if not piece: raise SystemExit("the client closed the connection early")
    received += len(piece)
    # 64 KiB/s, steadily.
    time.sleep(max(0, start + received / 65536 - time.monotonic()))
conn.sendall(b"done")
conn.close()
"""#

    @Test func aSlowSteadyPeerIsNeverSilentForTheSender() throws {
        let size = 384 * 1024
        let peer = try PythonPeer.tls(program: Self.program, arguments: [String(size)])
        defer { peer.stop() }
        let port = peer.port

        let connection = HTTP1Connection()
        defer { connection.close() }
        try connection.connect(host: "127.0.0.1", port: port, wait: .after(10),
                               tls: TLSConfiguration(certificateAuthorityFile: TestServers.tlsCAPath))
        try Self.shrinkSendBuffer(ofSocketConnectedTo: port)
        let body = [UInt8](repeating: 7, count: size)
        let pace = HTTP1Pace(minimumBytesPerSecond: 0, seconds: 30, silence: 1.5)
        #expect(throws: Never.self) { try connection.send(body, wait: .pace(pace)) }
        var answer = [UInt8](repeating: 0, count: 4)
        let count = try answer.withUnsafeMutableBytes { try connection.receive(into: $0, wait: .after(10)) }
        #expect(answer.prefix(count) == Array("done".utf8).prefix(count) && count > 0)
    }

    /// Sets a 64 KiB send buffer on this process's socket connected to 127.0.0.1:`port` (the
    /// connection's own; no other has that peer).
    private static func shrinkSendBuffer(ofSocketConnectedTo port: Int) throws {
        for fd in Int32(3)..<Int32(4096) {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: address.sin_port)) == port else { continue }
            var size: Int32 = 64 * 1024
            try #require(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0)
            return
        }
        Issue.record("no socket connected to port \(port)")
    }
}
