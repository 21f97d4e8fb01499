"""Test-only ASGI middleware adding the tus checksum extension to tuspyserver.

tuspyserver 4.4.3 does not implement https://tus.io/protocols/resumable-upload#checksum,
so the server at 127.0.0.1:18091 wraps the same app with this:

- OPTIONS: appends "checksum" to Tus-Extension and adds
  Tus-Checksum-Algorithm: sha1,sha256,md5.
- PATCH (and POST with a body, creation-with-upload) carrying
  "Upload-Checksum: <algorithm> <base64 digest of this request's body>":
  the whole body is received first; on a digest mismatch the answer is
  460 "Checksum Mismatch" and nothing reaches the app, so the upload's offset is
  unchanged. An unknown algorithm or malformed value answers 400. A client that
  disconnects mid-body leaves the upload unchanged too (an unverifiable chunk is
  discarded, as the extension requires). A matching body is replayed to the app.
Requests without Upload-Checksum pass through untouched.
"""

import base64
import binascii
import hashlib
import tempfile

ALGORITHMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "md5": hashlib.md5}
ADVERTISED = b"sha1,sha256,md5"
REPLAY_CHUNK = 1 << 20
SPOOL_IN_MEMORY = 32 << 20


def _header(scope, name):
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _plain(send, status, text):
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
                (b"tus-resumable", b"1.0.0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class ChecksumMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = (_header(scope, b"x-http-method-override") or scope["method"]).strip().upper()
        if method == "OPTIONS":
            await self.app(scope, receive, self._advertising(send))
            return
        checksum = _header(scope, b"upload-checksum")
        if checksum is None or method not in ("PATCH", "POST"):
            await self.app(scope, receive, send)
            return
        await self._verified(checksum, scope, receive, send)

    @staticmethod
    def _advertising(send):
        async def wrapped(message):
            if message["type"] == "http.response.start":
                headers = []
                for key, value in message.get("headers", []):
                    if key.lower() == b"tus-extension":
                        value = value + b",checksum"
                    headers.append((key, value))
                headers.append((b"tus-checksum-algorithm", ADVERTISED))
                message = dict(message, headers=headers)
            await send(message)

        return wrapped

    async def _verified(self, checksum, scope, receive, send):
        parts = checksum.strip().split(" ")
        if len(parts) != 2 or parts[0].lower() not in ALGORITHMS:
            await _plain(send, 400, "Unsupported or malformed Upload-Checksum")
            return
        try:
            expected = base64.b64decode(parts[1], validate=True)
        except (binascii.Error, ValueError):
            await _plain(send, 400, "Upload-Checksum value is not base64")
            return

        digest = ALGORITHMS[parts[0].lower()]()
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
        size = 0
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body = message.get("body", b"")
                digest.update(body)
                spool.write(body)
                size += len(body)
                if not message.get("more_body", False):
                    break
            if digest.digest() != expected:
                await _plain(send, 460, "Checksum Mismatch")
                return
            spool.seek(0)
            await self.app(scope, self._replay(spool, size, receive), send)
        finally:
            spool.close()

    @staticmethod
    def _replay(spool, size, receive):
        state = {"sent": 0, "done": False}

        async def replay():
            if state["done"]:
                return await receive()
            data = spool.read(REPLAY_CHUNK)
            state["sent"] += len(data)
            more = state["sent"] < size
            state["done"] = not more
            return {"type": "http.request", "body": data, "more_body": more}

        return replay
