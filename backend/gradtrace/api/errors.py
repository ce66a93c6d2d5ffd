"""The one place where errors become HTTP answers.

Every 4xx/5xx the service sends has the body ``{"error": {"code", "message", "detail"}}``
(:class:`gradtrace.schema.ErrorResponse`): errors of gradtrace's own hierarchy
(:mod:`gradtrace.errors`, each class carries its status and code), FastAPI's validation errors
(422 ``invalid_request``), Starlette's HTTP errors (404 for unknown routes, 405, 400 for a body
that does not parse), and, as a last resort, anything unexpected (500 ``internal``, logged
with its traceback; the tests treat any 500 as a bug). 429 and 503 carry ``Retry-After``, 416
``Content-Range: bytes */size``.

A browser that asks for a page (``Accept: text/html`` on a non-API path) gets the same
message as a small HTML page, so a broken share link shows a sentence, not JSON.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from gradtrace.api.error_page import error_page, error_page_policy
from gradtrace.errors import GradtraceError, RangeNotSatisfiable, RateLimited, ServiceUnavailable
from gradtrace.schema import ErrorResponse

log = logging.getLogger("gradtrace.api")

_HTTP_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 409: "conflict", 411: "length_required",
    413: "payload_too_large", 415: "unsupported_media_type", 422: "invalid_request",
    429: "rate_limited", 503: "unavailable",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": desc} for code, desc in {
        400: "The body could not be parsed (not UTF-8, or nested too deeply)",
        404: "Unknown id", 413: "Code or body over its limit", 415: "Body is not JSON", 422: "Invalid fields",
        429: "Too many requests from this client (Retry-After)",
        503: "Worker pool saturated or storage unavailable (Retry-After)",
    }.items()
}


def error_response(request: Request | None, status: int, code: str, message: str,
                   detail: object | None = None, retry_after: float | None = None) -> Response:
    """Build the error answer; the only constructor of error bodies in the service."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    if status == 405 and request is not None:
        allow = request.scope.get("gradtrace.allow")
        if allow:
            headers["Allow"] = allow
    if request is not None and _wants_html(request):
        page = error_page(status, message, request.url.path)
        headers["Content-Security-Policy"] = error_page_policy(_frame_ancestors(request))
        return HTMLResponse(page, status_code=status, headers=headers)
    body = {"error": {"code": code, "message": message, "detail": detail}}
    return JSONResponse(body, status_code=status, headers=headers)


def from_exception(request: Request | None, exc: GradtraceError) -> Response:
    retry = exc.retry_after if isinstance(exc, RateLimited | ServiceUnavailable) else None
    response = error_response(request, exc.status_code, exc.code, exc.message, exc.detail, retry)
    if isinstance(exc, RangeNotSatisfiable):  # RFC 9110 section 15.5.17
        response.headers["Content-Range"] = f"bytes */{exc.size}"
    return response


def _frame_ancestors(request: Request) -> str:
    """The sites that may embed the service's pages (Settings), ``'self'`` before start-up."""
    app = request.scope.get("app")
    services = getattr(getattr(app, "state", None), "services", None)
    return str(getattr(getattr(services, "settings", None), "frame_ancestors", "'self'"))


def _wants_html(request: Request) -> bool:
    path = request.url.path
    if path.startswith("/api/") or path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        return False
    return "text/html" in request.headers.get("accept", "")


def _allowed_methods(request: Request) -> str:
    """Every method some route offers for this path (Starlette names only the first route's)."""
    methods = {method for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
               for route in request.app.router.routes
               if route.matches({**request.scope, "method": method})[0] is Match.FULL}
    return ", ".join(sorted(methods)) or "nothing"


def _validation_detail(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    items: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        items.append({"loc": loc, "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    if not items:
        return "the request is invalid", items
    first = items[0]
    where = ".".join(p for p in first["loc"] if p != "body") or "body"
    message = "the body is not valid JSON" if first["type"] == "json_invalid" else f"{where}: {first['msg']}"
    if len(items) > 1:
        message += f" (and {len(items) - 1} more)"
    return message, items


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    async def on_gradtrace(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, GradtraceError)
        return from_exception(request, exc)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        message, detail = _validation_detail(exc)
        return error_response(request, 422, "invalid_request", message, detail)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        status = exc.status_code
        message = str(exc.detail) if exc.detail else "error"
        if status == 404 and message == "Not Found":
            message = f"no such page or endpoint: {request.method} {request.url.path}"
        elif status == 405:
            allowed = _allowed_methods(request)
            message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
            request.scope["gradtrace.allow"] = allowed
        elif status == 400 and message == "There was an error parsing the body":
            message = "the body could not be parsed: it must be UTF-8 JSON of reasonable depth"
        elif status == 413:
            message = "the request body is larger than the limit"
        code = _HTTP_CODES.get(status, "error" if status < 500 else "internal")
        return error_response(request, status, code, message)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(request, 500, "internal",
                              "an unexpected error occurred; it has been logged", None)

    app.add_exception_handler(GradtraceError, on_gradtrace)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
