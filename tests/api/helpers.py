"""Assertions and snippets shared by the API tests."""

from __future__ import annotations

import httpx

from conftest import lesson_code

CHAIN_RULE = lesson_code("01_chain_rule")
BUSY_LOOP = "x = torch.ones(2, requires_grad=True)\nwhile True:\n    pass\n"


def assert_error(r: httpx.Response, status: int, code: str) -> dict:
    """``r`` is the error answer ``{"error": {code, message, detail}}`` with this status."""
    assert r.status_code == status, f"expected {status}, got {r.status_code}: {r.text[:500]}"
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "detail"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    assert r.headers.get("x-request-id"), "every answer carries its request id"
    if status in (429, 503):
        assert int(r.headers["retry-after"]) >= 1
    return body["error"]
