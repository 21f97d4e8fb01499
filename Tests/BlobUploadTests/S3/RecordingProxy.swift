import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// A TCP proxy in front of moto, in Python, that records every request it relays and, when
/// finished, reports each one with its body's CRC-32C, CRC-32, SHA-1, SHA-256 and CRC-64/NVME
/// (base64) computed by `crc32c`, `zlib`, `hashlib` and `awscrt`: checksums computed independently of the
/// package, to compare with the `x-amz-checksum-*` fields the client sent.
final class RecordingProxy: @unchecked Sendable {
    /// One relayed request.
    struct Request {
        var method: String
        var target: String
        /// Header fields, lowercased names.
        var fields: [String: String]
        var bodyLength: Int
        /// Base64 checksums of the body by algorithm name (`crc32c`, `crc32`, `sha1`, `sha256`,
        /// `crc64nvme`, `md5`).
        var checksums: [String: String]
        /// The body, when it is short text (the complete request's XML).
        var text: String?
    }

    private static let program = #"""
import base64, hashlib, json, socket, sys, threading, zlib
import crc32c
from awscrt.checksums import crc64nvme
target = int(sys.argv[1])
gate = int(sys.argv[2])  # request bytes relayed in all before the rest is held; 0: no gate
released = threading.Event()
relayed = [0]
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
recorded, lock, threads = [], threading.Lock(), []
def pump(src, dst, keep):
    while True:
        # A peer that resets its side ends the relay like one that closes it.
        try: data = src.recv(1 << 16 if gate else 1 << 20)
        except OSError: break
        if not data:
            break
        if keep is not None:
            keep.append(data)
            if gate:
                with lock:
                    relayed[0] += len(data)
                    over = relayed[0] > gate
                if over:
                    # Held bytes never reach the server: a connection cut at the gate.
                    released.wait()
                    break
        try: dst.sendall(data)
        except OSError: break
    try: dst.shutdown(socket.SHUT_WR)
    except OSError: pass
def serve(client):
    server = socket.create_connection(("127.0.0.1", target))
    keep = []
    up = threading.Thread(target=pump, args=(client, server, keep))
    up.start()
    pump(server, client, None)
    up.join()
    client.close(); server.close()
    with lock: recorded.append(b"".join(keep))
def accept():
    while True:
        try: client, _ = listener.accept()
        except OSError: return
        t = threading.Thread(target=serve, args=(client,), daemon=True); t.start(); threads.append(t)
threading.Thread(target=accept, daemon=True).start()
sys.stdin.read()
released.set()
for t in list(threads): t.join(10)
def b64(value, n): return base64.b64encode(value.to_bytes(n, "big")).decode()
out = []
for stream in recorded:
    while stream:
        end = stream.find(b"\r\n\r\n")
        if end < 0: break
        lines = stream[:end].decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        fields = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        size = int(fields.get("content-length", "0"))
        body = stream[end + 4:end + 4 + size]
        stream = stream[end + 4 + size:]
        out.append({"method": method, "target": path, "fields": fields, "length": len(body),
            "checksums": {"crc32c": b64(crc32c.crc32c(body), 4), "crc32": b64(zlib.crc32(body), 4),
                          "sha1": base64.b64encode(hashlib.sha1(body).digest()).decode(),
                          "sha256": base64.b64encode(hashlib.sha256(body).digest()).decode(),
                          "md5": base64.b64encode(hashlib.md5(body).digest()).decode(),
                          "crc64nvme": b64(crc64nvme(body), 8)},
            "text": body.decode() if size < 100000 and body.startswith(b"<") else None})
json.dump(out, sys.stdout)
"""#

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    /// The port to send to instead of moto's.
    let port: Int

    /// A proxy to `targetPort`; `holdingAfter` drops every request byte past that many in all (the connection is cut there at ``finish()``), for
    /// tests that must act in the middle of an upload without racing it.
    init(targetPort: UInt16 = TestServers.motoPort, holdingAfter gate: Int = 0) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.program, String(targetPort), String(gate)]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        guard let port = Int(try output.fileHandleForReading.readLine()) else {
            throw TestSupportError("the recording proxy did not start: \(TestServers.instructions)")
        }
        self.port = port
    }

    /// The endpoint that goes through the proxy.
    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// ``finish()`` waiting on a thread of its own: the proxy checksums every body it relayed
    /// (seconds for a few MiB), which must not hold a thread of the tests' cooperative pool.
    func finished() async throws -> [Request] {
        try await offThePool { try self.finish() }
    }

    /// Stops the proxy and returns what it relayed.
    func finish() throws -> [Request] {
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        ChildExit.waitForever(process)
        let list = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        return list.map { item in
            Request(
                method: item["method"] as? String ?? "", target: item["target"] as? String ?? "",
                fields: item["fields"] as? [String: String] ?? [:], bodyLength: item["length"] as? Int ?? 0,
                checksums: item["checksums"] as? [String: String] ?? [:], text: item["text"] as? String)
        }
    }
}
