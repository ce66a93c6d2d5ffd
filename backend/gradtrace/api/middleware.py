"""Pure ASGI middleware: request ids, one log line per request, and body guards.

Pure ASGI (not ``BaseHTTPMiddleware``) so that the run endpoint still sees the client's
``http.disconnect`` and can kill its job (NOTE [cancellation] in ``runs.py``).

* Every request gets an id (the caller's ``X-Request-ID`` when it is short and plain, else a
  fresh one), echoed in the ``X-Request-ID`` answer header and in the log line.
* One JSON log line per request on the ``gradtrace.access`` logger: method, route, status,
  duration, client, and for runs ``code_sha256`` (a prefix of the snippet's hash, never the
  snippet itself).
* Bodies sent to ``/api/``: anything but JSON is a 415, and more than ``max_body_bytes`` a
  413, decided from the headers when they tell, else while reading.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from email.message import Message as _EmailMessage
from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gradtrace.api.errors import error_response, from_exception
from gradtrace.api.metrics import Metrics
from gradtrace.errors import PayloadTooLarge, RequestRejected, UnsupportedMediaType

access_log = logging.getLogger("gradtrace.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _is_json(content_type: str) -> bool:
    msg = _EmailMessage()
    msg["content-type"] = content_type
    if msg.get_content_maintype() != "application":
        return False
    sub = msg.get_content_subtype()
    return sub == "json" or sub.endswith("+json")


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, metrics: Metrics) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        incoming = headers.get("x-request-id", "")
        request_id = incoming if _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status_holder = {"status": 0}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        try:
            refusal = self._refuse_body(scope, headers)
            if refusal is not None:
                await refusal(scope, receive, send_wrapper)
            else:
                await self.app(scope, self._limited(receive), send_wrapper)
        except Exception:
            # The last resort (api/errors.py's handler has already answered when it could):
            # log it, and answer in the error shape with the request id if nothing was sent.
            access_log.exception("unhandled error on %s %s (request %s)", scope["method"], scope["path"],
                                 request_id)
            if status_holder["status"]:
                raise
            answer = error_response(Request(scope), 500, "internal",
                                    "an unexpected error occurred; it has been logged")
            await answer(scope, receive, send_wrapper)
        finally:
            self._log(scope, request_id, status_holder["status"] or 500, started)

    def _refuse_body(self, scope: Scope, headers: Headers) -> Any:
        if scope["method"] not in _BODY_METHODS or not scope["path"].startswith("/api/"):
            return None
        request = Request(scope)
        length = headers.get("content-length")
        has_body = "transfer-encoding" in headers or (length is not None and length.strip() != "0")
        content_type = headers.get("content-type")
        if has_body and (not content_type or not _is_json(content_type)):
            return from_exception(request, UnsupportedMediaType(
                f"the body must be JSON (Content-Type: application/json), got {content_type or 'none'}"))
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                return from_exception(request, RequestRejected("Content-Length is not a number"))
            if size > self.max_body_bytes:
                return from_exception(request, PayloadTooLarge(
                    f"the body is {size} bytes, over the limit of {self.max_body_bytes} bytes",
                    detail={"limit_bytes": self.max_body_bytes}))
        return None

    def _limited(self, receive: Receive) -> Receive:
        seen = 0
        limit = self.max_body_bytes

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise HTTPException(413, f"the body is over the limit of {limit} bytes")
            return message

        return wrapped

    def _log(self, scope: Scope, request_id: str, status: int, started: float) -> None:
        route = scope.get("route")
        route_path = getattr(route, "path", None) or "unmatched"
        self.metrics.requests.labels(scope["method"], route_path, str(status)).inc()
        if not access_log.isEnabledFor(logging.INFO):
            return
        state = scope.get("state", {})
        client = scope.get("client")
        line: dict[str, Any] = {
            "event": "request", "request_id": request_id, "method": scope["method"],
            "path": scope["path"], "route": route_path, "status": status,
            "ms": round((time.perf_counter() - started) * 1000, 2),
            "client": client[0] if client else None,
        }
        for key in ("code_sha256", "run_status", "run_id", "share_id"):
            if key in state:
                line[key] = state[key]
        access_log.info(json.dumps(line, separators=(",", ":")))
