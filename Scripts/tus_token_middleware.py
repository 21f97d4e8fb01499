"""Bearer tokens that expire mid-upload, in front of the tus app (ASGI middleware).

For the token-refresh tests (tus_server.py --expiring-tokens N, on a private port only):
  GET /token          issues a new random token, good for N requests
  any other request   needs "Authorization: Bearer <token>" with uses left; otherwise
                      401 with WWW-Authenticate, and the request never reaches tuspyserver
  GET /token-stats    JSON {"issued": tokens issued, "refused": requests refused}
"""

import json
import secrets
import threading


class ExpiringTokenMiddleware:
    def __init__(self, app, uses):
        self.app = app
        self.uses = uses
        self.tokens = {}
        self.issued = 0
        self.refused = 0
        self.lock = threading.Lock()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if path == "/token" and method == "GET":
            token = secrets.token_hex(16)
            with self.lock:
                self.tokens[token] = self.uses
                self.issued += 1
            return await self.answer(send, 200, token.encode())
        if path == "/token-stats" and method == "GET":
            with self.lock:
                stats = {"issued": self.issued, "refused": self.refused}
            return await self.answer(send, 200, json.dumps(stats).encode())
        fields = dict(scope["headers"])
        authorization = fields.get(b"authorization", b"").decode("latin-1")
        token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else ""
        with self.lock:
            left = self.tokens.get(token, 0)
            if left > 0:
                self.tokens[token] = left - 1
            else:
                self.refused += 1
        if left <= 0:
            # The body is read and dropped, so the client sees the 401, not a reset.
            while True:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body"):
                    break
            return await self.answer(
                send, 401, b"token expired or missing",
                [(b"www-authenticate", b'Bearer error="invalid_token"'), (b"tus-resumable", b"1.0.0")])
        return await self.app(scope, receive, send)

    @staticmethod
    async def answer(send, status, body, extra=()):
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())] + list(extra)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
