"""Answering with a stored document: gzip straight from storage when the client takes it.

Documents are stored as gzip'd canonical JSON (NOTE [stored form] in ``storage/codec.py``);
a client that sends ``Accept-Encoding: gzip`` (browsers, httpx, requests, curl --compressed)
gets those bytes as they are, with ``Content-Encoding: gzip``, and everyone else gets them
decompressed. Either way the JSON is byte-identical.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from gradtrace.storage.codec import StoredBlob, current_bytes, decompress


def accepts_gzip(request: Request) -> bool:
    for part in request.headers.get("accept-encoding", "").split(","):
        token, _, params = part.strip().partition(";")
        if token.strip().lower() in ("gzip", "*") and params.replace(" ", "") not in ("q=0", "q=0.0"):
            return True
    return False


def json_response(request: Request, *, raw: bytes | None, gz: bytes | None, status_code: int = 200,
                  headers: dict[str, str] | None = None) -> Response:
    """Answer JSON given its plain bytes, its gzip, or both."""
    out = dict(headers or {})
    out["Vary"] = "Accept-Encoding"
    if gz is not None and (raw is None or accepts_gzip(request)):
        if accepts_gzip(request):
            out["Content-Encoding"] = "gzip"
            return Response(gz, status_code=status_code, media_type="application/json", headers=out)
        raw = decompress(gz)
    assert raw is not None
    return Response(raw, status_code=status_code, media_type="application/json", headers=out)


def blob_response(request: Request, blob: StoredBlob, headers: dict[str, str] | None = None) -> Response:
    data, is_gzip = current_bytes(blob)
    if is_gzip:
        return json_response(request, raw=None, gz=data, headers=headers)
    return json_response(request, raw=data, gz=None, headers=headers)
