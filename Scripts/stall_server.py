"""A tiny HTTP/1.1 peer that stalls on purpose, for timeout tests.

Started by Scripts/test-servers.sh on 127.0.0.1:18081 and reached either directly
or through nginx at http://127.0.0.1:18080/stall/... (nginx forwards the path as is).

Paths:
  /stall/health            200 "stall-ok" (used by the health check)
  /stall/after/N[/TOTAL]   200 with Content-Length TOTAL (default 2*N), sends N bytes
                           of a fixed pattern, then stalls
  anything else            reads the request head, then never answers

A stalled connection never reads again (so a client sending a body blocks once the
socket buffers fill) and is held until the client closes it or HOLD_SECONDS pass.
"""

import argparse
import os
import re
import select
import socket
import threading

HOLD_SECONDS = 600
PATTERN = bytes(range(256)) * 256  # 64 KiB, sent repeatedly
AFTER = re.compile(r"^/stall/after/(\d+)(?:/(\d+))?/?$")


def read_head(conn):
    """Read up to the end of the request head; return the request target or None."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return None
        data += chunk
        if len(data) > 65536:
            return None
    request_line = data.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    return parts[1] if len(parts) >= 2 else None


def hold(conn):
    # POLLRDHUP reports the peer's close without consuming what it sent, so a client
    # that keeps writing still sees a server that never reads.
    poller = select.poll()
    poller.register(conn, select.POLLRDHUP)
    poller.poll(HOLD_SECONDS * 1000)


def send_pattern(conn, count):
    while count > 0:
        piece = PATTERN[: min(count, len(PATTERN))]
        conn.sendall(piece)
        count -= len(piece)


def serve(conn):
    try:
        target = read_head(conn)
        if target is None:
            return
        path = target.split("?", 1)[0]
        if path in ("/stall/health", "/stall/health/"):
            body = b"stall-ok"
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(body)
                + body
            )
            return
        match = AFTER.match(path)
        if match:
            sent = int(match.group(1))
            total = int(match.group(2)) if match.group(2) else 2 * sent
            total = max(total, sent)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                + b"Content-Length: %d\r\n\r\n" % total
            )
            send_pattern(conn, sent)
        hold(conn)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid-file", required=True)
    args = parser.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(128)
    with open(args.pid_file, "w") as f:
        f.write(f"{os.getpid()}\n")
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
