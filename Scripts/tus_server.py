"""tus test server: tuspyserver 4.4.3 (a FastAPI router factory) under uvicorn.

Started by Scripts/test-servers.sh twice on the same storage directory:
  127.0.0.1:18090  the plain tuspyserver app                      (--port 18090)
  127.0.0.1:18091  the same app behind ChecksumMiddleware         (--port 18091 --checksum)
Private servers of tests (BlobTestSupport.TusServerProcess) may add --expiring-tokens N
(tus_token_middleware.py: bearer tokens that expire every N requests).

Routes (tuspyserver 4.4.3): OPTIONS /files/, POST /files/, HEAD/PATCH/DELETE /files/<id>.
There is no GET route: an upload's bytes are the file <data dir>/<id> and its state is
the JSON sidecar <data dir>/<id>.info (id = 32 lowercase hex digits, the last path
component of the Location header).
"""

import argparse
import json
import os
import signal
import threading
import time

import uvicorn
from fastapi import FastAPI
from tuspyserver import create_tus_router

from tus_checksum_middleware import ChecksumMiddleware
from tus_token_middleware import ExpiringTokenMiddleware

DEFAULT_DATA_DIR = "/tmp/blobstream-servers/tus-data"


def make_app(data_dir):
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(create_tus_router(prefix="files", files_dir=data_dir))
    return app


def repair(data_dir):
    """Cut every upload's data file back to the offset its sidecar acknowledges.

    tuspyserver appends PATCH bodies to the data file chunk by chunk but records the
    new offset only when the request ends. A server killed mid-PATCH therefore leaves
    bytes past the acknowledged offset, and the next PATCH (opened in append mode)
    would land after them. A real server recovers from such a crash; this makes the
    restart tests exercise the client, not this artefact.
    """
    if not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        if not name.endswith(".info"):
            continue
        data_path = os.path.join(data_dir, name[: -len(".info")])
        try:
            with open(os.path.join(data_dir, name)) as f:
                offset = int(json.load(f)["offset"])
            if os.path.getsize(data_path) > offset:
                os.truncate(data_path, offset)
        except (OSError, ValueError, KeyError, TypeError):
            continue


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def exit_with(pid):
    """End this process once process `pid` is gone (a zombie counts as gone).

    For private servers started by a test process (BlobTestSupport.TusServerProcess): a
    test run that is killed must not leave servers behind. The parent pid cannot be used:
    Foundation's Process does not leave the test process as the parent.
    """

    def watch():
        while alive(pid):
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid-file", required=True)
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    parser.add_argument("--checksum", action="store_true", help="verify Upload-Checksum")
    parser.add_argument("--repair", action="store_true", help="repair uploads before serving")
    parser.add_argument("--expiring-tokens", type=int, metavar="N",
                        help="require bearer tokens from GET /token, each good for N requests")
    parser.add_argument("--exit-with", type=int, metavar="PID", help="stop when process PID ends")
    args = parser.parse_args()

    # A parent that spawned us from a thread with signals blocked (as Dispatch worker threads
    # are) passes that mask on; SIGTERM must reach uvicorn for a graceful stop.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if args.exit_with:
        exit_with(args.exit_with)

    os.makedirs(args.data_dir, exist_ok=True)
    if args.repair:
        repair(args.data_dir)
    app = make_app(args.data_dir)
    if args.checksum:
        app = ChecksumMiddleware(app)
    if args.expiring_tokens:
        app = ExpiringTokenMiddleware(app, args.expiring_tokens)
    with open(args.pid_file, "w") as f:
        f.write(f"{os.getpid()}\n")
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="info",
        # Longer than a client's idle pool timeout would be safest; uvicorn's 5 s
        # default closes idle keep-alive connections under clients mid-test.
        timeout_keep_alive=75,
        # restart-tus must not wait for a client that keeps a PATCH open.
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
