import BlobTestSupport
import Foundation
import SystemCalls
import Testing

/// A TCP proxy in Python in front of tuspyserver or moto that parses the HTTP/1.1 exchanges it
/// relays, logs each request (method, target, `Upload-Offset`, body length) and each answer
/// it passed on whole, and SIGKILLs a client at a point chosen by bytes, not time: once the
/// server has confirmed `point` bytes (tus: the highest `Upload-Offset` of a 2xx `PATCH`
/// answer; S3: the sizes of the parts a 2xx `UploadPart` answer confirmed or a `ListParts` answer
/// lists, so parts whose answer a killed client never got count too), the next `extra`
/// request body bytes are relayed, and the client is killed before the byte after them leaves.
/// Kills thus land mid-request, between requests, mid-part, on any machine load.
final class KillingProxy: @unchecked Sendable {
    /// One logged event, in the order the proxy saw them.
    struct Event: Sendable {
        /// `request` (its head was read), or `answer` (relayed whole to the client).
        var kind: String
        var method: String
        var target: String
        /// The answer's status (0 for a request).
        var status: Int
        /// `Upload-Offset` of the request or answer, if any.
        var uploadOffset: Int64?
        /// The request's body length.
        var length: Int64
    }

    private static let program = #"""
import json, os, re, signal, socket, sys, threading
from urllib.parse import parse_qs, urlsplit
mode, target = sys.argv[1], int(sys.argv[2])
lock = threading.Lock()
events, parts = [], {}
state = {"confirmed": 0, "arm": None, "relayed": 0, "generation": 0}
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)

class Killed(Exception): pass

def confirmed():
    return state["confirmed"] if mode == "tus" else sum(parts.values())

def read_head(sock, buf):
    while b"\r\n\r\n" not in buf:
        data = sock.recv(1 << 16)
        if not data: return None, buf
        buf += data
    end = buf.index(b"\r\n\r\n") + 4
    return buf[:end], buf[end:]

def fields(head):
    lines = head.decode("latin-1").split("\r\n")
    out = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1); out[k.strip().lower()] = v.strip()
    return lines[0], out

def owned_by(pid, client):
    # Whether the client end of `client` is a socket of process `pid` (/proc/net/tcp names the
    # socket's inode, /proc/PID/fd the sockets the process holds).
    local, remote = "0100007F:%04X" % client.getpeername()[1], "0100007F:%04X" % client.getsockname()[1]
    with open("/proc/net/tcp") as table:
        inodes = [f[9] for f in (line.split() for line in table) if f[1] == local and f[2] == remote]
    try:
        links = [os.readlink("/proc/%d/fd/%s" % (pid, fd)) for fd in os.listdir("/proc/%d/fd" % pid)]
    except OSError:
        return False
    return any("socket:[%s]" % inode in links for inode in inodes)

def body_piece(piece, dst, generation, client):
    # Kill rule: once the server confirmed the armed point, relay `extra` more body bytes, then kill.
    with lock:
        # A connection of a client killed before: what it sent before dying goes no further.
        if generation != state["generation"]: raise Killed()
        arm = state["arm"]
        if arm and confirmed() >= arm[1]:
            if state["relayed"] + len(piece) > arm[2]:
                # One the dead client made just before dying, accepted only after the kill.
                if not owned_by(arm[0], client): raise Killed()
                state["arm"] = None
                os.kill(arm[0], signal.SIGKILL)
                state["generation"] += 1
                print("killed", flush=True)
                raise Killed()
            state["relayed"] += len(piece)
    dst.sendall(piece)

def upstream(client, server, pending):
    with lock: generation = state["generation"]
    buf = b""
    try:
        while True:
            head, buf = read_head(client, buf)
            if head is None: break
            first, f = fields(head)
            method, path = first.split(" ")[0], first.split(" ")[1]
            length = int(f.get("content-length", "0"))
            with lock:
                events.append({"kind": "request", "method": method, "target": path, "status": 0,
                               "offset": f.get("upload-offset"), "length": length})
                pending.append((method, path, length))
            server.sendall(head)
            remaining = length
            while remaining > 0:
                if not buf:
                    buf = client.recv(min(1 << 20, remaining))
                    if not buf: raise Killed()
                piece, buf = buf[:remaining], buf[remaining:]
                remaining -= len(piece)
                body_piece(piece, server, generation, client)
    except (Killed, OSError):
        pass
    for s in (client, server):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass

def downstream(server, client, pending):
    buf = b""
    try:
        while True:
            head, buf = read_head(server, buf)
            if head is None: break
            first, f = fields(head)
            status = int(first.split(" ")[1])
            with lock: method, path, length = pending.pop(0) if pending else ("?", "?", 0)
            out = [head]
            if method == "HEAD" or status in (204, 304) or status < 200:
                pass
            elif "content-length" in f:
                need = int(f["content-length"])
                while len(buf) < need:
                    data = server.recv(1 << 16)
                    if not data: break
                    buf += data
                out.append(buf[:need]); buf = buf[need:]
            elif f.get("transfer-encoding", "").lower() == "chunked":
                while not buf.endswith(b"0\r\n\r\n"):
                    data = server.recv(1 << 16)
                    if not data: break
                    buf += data
                out.append(buf); buf = b""
            else:
                # Neither: the body ends with the connection.
                while True:
                    data = server.recv(1 << 16)
                    if not data: break
                    buf += data
                out.append(buf); buf = b""
            client.sendall(b"".join(out))
            with lock:
                offset = f.get("upload-offset")
                events.append({"kind": "answer", "method": method, "target": path, "status": status,
                               "offset": offset, "length": length})
                if 200 <= status < 300 and method == "PATCH" and offset is not None:
                    state["confirmed"] = max(state["confirmed"], int(offset))
                query = parse_qs(urlsplit(path).query, keep_blank_values=True)
                upload = query.get("uploadId", [""])[0]
                if 200 <= status < 300 and method == "PUT" and "partNumber" in query:
                    parts[(upload, query["partNumber"][0])] = length
                # A part list tells what the server has, answers the proxy never relayed included.
                if 200 <= status < 300 and method == "GET" and upload and len(out) > 1:
                    for number, size in re.findall(rb"<PartNumber>(\d+)</PartNumber>.*?<Size>(\d+)</Size>", out[1], re.S):
                        parts[(upload, number.decode())] = int(size)
    except OSError:
        pass
    for s in (client, server):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass

def serve(client):
    server = socket.create_connection(("127.0.0.1", target))
    pending = []
    t = threading.Thread(target=upstream, args=(client, server, pending), daemon=True)
    t.start()
    downstream(server, client, pending)
    t.join()
    client.close(); server.close()

def accept():
    while True:
        try: client, _ = listener.accept()
        except OSError: return
        threading.Thread(target=serve, args=(client,), daemon=True).start()
threading.Thread(target=accept, daemon=True).start()

for line in sys.stdin:
    words = line.split()
    if words and words[0] == "arm":
        with lock:
            state["arm"] = (int(words[1]), int(words[2]), int(words[3])); state["relayed"] = 0
    elif words and words[0] == "finish":
        break
with lock:
    print(json.dumps(events), flush=True)
"""#

    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lines = Locked<[String]>([])
    private let changed = NSCondition()
    /// The port clients send to.
    let port: Int

    /// A proxy to `targetPort`, reading `tus` or `s3` exchanges.
    init(protocol mode: String, targetPort: UInt16) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.program, mode, String(targetPort)]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let reading = output.fileHandleForReading
        onOwnThread { [lines, changed] in
            var pending = ""
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = String(pending[..<newline])
                    pending = String(pending[pending.index(after: newline)...])
                    changed.withLock {
                        lines.mutate { $0.append(line) }
                        changed.broadcast()
                    }
                }
            }
            changed.withLock {
                lines.mutate { $0.append("closed") }
                changed.broadcast()
            }
        }
        let (lines, changed) = (self.lines, self.changed)
        let first: String? = changed.withLock {
            let deadline = Date(timeIntervalSinceNow: 30)
            while lines.value.isEmpty, Date() < deadline { _ = changed.wait(until: deadline) }
            return lines.value.first
        }
        guard let first, let port = Int(first) else {
            throw TestSupportError("the killing proxy did not start: \(TestServers.instructions)")
        }
        self.port = port
    }

    /// Kills process `pid` once the server confirmed `point` bytes and `extra` more request
    /// body bytes were relayed after that.
    func arm(pid: Int32, point: Int64, extra: Int64) {
        input.fileHandleForWriting.write(Data("arm \(pid) \(point) \(extra)\n".utf8))
    }

    /// How many kills the proxy made so far.
    var kills: Int { lines.value.filter { $0 == "killed" }.count }

    /// Stops the proxy and returns what it logged.
    func finish() throws -> [Event] {
        input.fileHandleForWriting.write(Data("finish\n".utf8))
        try input.fileHandleForWriting.close()
        let deadline = Date(timeIntervalSinceNow: 60)
        let json: String? = changed.withLock {
            while Date() < deadline {
                if let line = lines.value.first(where: { $0.hasPrefix("[") }) { return line }
                if lines.value.contains("closed") { return nil }
                _ = changed.wait(until: deadline)
            }
            return nil
        }
        ChildExit.waitForever(process)
        let text = try #require(json, "the killing proxy reported no log")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        return list.map { item in
            Event(
                kind: item["kind"] as? String ?? "", method: item["method"] as? String ?? "",
                target: item["target"] as? String ?? "", status: item["status"] as? Int ?? 0,
                uploadOffset: (item["offset"] as? String).flatMap { Int64($0) }, length: Int64(item["length"] as? Int ?? 0))
        }
    }
}
