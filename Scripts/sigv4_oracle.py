#!/usr/bin/env python3
"""botocore's S3 Signature Version 4 signer as an independent oracle for the Swift signer.

Reads a JSON array of requests on stdin and prints a JSON array of signatures, one per request:

  request:  {"method", "endpoint" (scheme://host[:port]), "path" (the raw key path, e.g.
             "/bucket/a b/ü"), "params" ([[name, value], ...], raw), "headers" ({name: value}),
             "body_hex" (signed payload) or "unsigned": true, "access_key", "secret_key",
             "token" (or null), "region", "timestamp" ("20261123T120000Z")}
  answer:   {"canonical_request", "string_to_sign", "authorization", "headers", "url"}

The path is percent-encoded the way botocore's REST serializer encodes S3 keys
(percent_encode(key, safe="/~")), and the query parameters are given to botocore raw, so both
sides canonicalize from the same raw request. S3SigV4Auth (not plain SigV4Auth) is the signer
S3 clients use: it does not normalize the path and always sends X-Amz-Content-SHA256.
"""
import datetime
import json
import sys

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode


class RecordingSigner(botocore.auth.S3SigV4Auth):
    """Keeps the canonical request and string to sign that add_auth computed (computing them
    again afterwards would sign the Authorization header too)."""

    def string_to_sign(self, request, canonical_request):
        self.canonical = canonical_request
        self.signed_text = super().string_to_sign(request, canonical_request)
        return self.signed_text


def sign(spec):
    stamp = datetime.datetime.strptime(spec["timestamp"], "%Y%m%dT%H%M%SZ")
    botocore.auth.get_current_datetime = lambda: stamp
    url = spec["endpoint"] + percent_encode(spec["path"], safe="/~")
    body = bytes.fromhex(spec.get("body_hex", ""))
    request = AWSRequest(method=spec["method"], url=url, headers=dict(spec.get("headers", {})),
                         data=body, params=[tuple(pair) for pair in spec.get("params", [])])
    if spec.get("unsigned"):
        request.context["payload_signing_enabled"] = False
    credentials = Credentials(spec["access_key"], spec["secret_key"], spec.get("token"))
    signer = RecordingSigner(credentials, "s3", spec["region"])
    if spec.get("unsigned"):
        # S3SigV4Auth decides from the URL scheme alone; the caller's choice wins, as it does
        # with botocore's s3 "payload_signing_enabled" configuration.
        signer._should_sha256_sign_payload = lambda request: False
    signer.add_auth(request)
    prepared = request.prepare()
    return {
        "canonical_request": signer.canonical,
        "string_to_sign": signer.signed_text,
        "authorization": request.headers["Authorization"],
        "headers": {name: value for name, value in request.headers.items()},
        "url": prepared.url,
    }


def main():
    json.dump([sign(spec) for spec in json.load(sys.stdin)], sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
