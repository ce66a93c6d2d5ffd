"""Every answer carries the security headers (NOTE [security headers] in api/security.py), and
``HEAD`` answers wherever ``GET`` does (NOTE [HEAD])."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from starlette.routing import Mount, Route

from api.helpers import CHAIN_RULE
from conftest import Server
from gradtrace.api import lessons, ops, pages, runs, shares
from gradtrace.api.app import create_app
from gradtrace.settings import Settings

EXPECTED = {"x-content-type-options": "nosniff", "referrer-policy": "strict-origin-when-cross-origin",
            "x-frame-options": "SAMEORIGIN", "cross-origin-opener-policy": "same-origin"}


def directives(csp: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in csp.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def assert_strict(headers: httpx.Headers, *, ancestors: list[str] | None = None) -> None:
    for name, value in EXPECTED.items():
        if name == "x-frame-options" and ancestors not in (None, ["'self'"]):
            assert name not in headers
            continue
        assert headers.get(name) == value, (name, dict(headers))
    csp = directives(headers["content-security-policy"])
    assert csp["default-src"] == ["'none'"] and csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    assert csp["frame-ancestors"] == (ancestors or ["'self'"])
    for name, values in csp.items():
        if name == "frame-ancestors":
            continue
        # no inline code, no eval, no remote origin: only this origin, and data:/blob: made here
        # (a page's style by nonce or hash: NOTE [styles under the policy])
        assert all(v in ("'self'", "'none'", "data:", "blob:") for v in values if not (
            name == "style-src" and v.startswith(("'nonce-", "'sha256-")))), (name, values)


def every_route() -> list[tuple[str, str]]:
    """(method, path) of every route and mount of the app, path parameters filled in."""
    app = create_app(Settings(data_dir="/nonexistent-never-created"))
    out: list[tuple[str, str]] = []
    # the routers app.py includes (FastAPI keeps included routes behind a wrapper), then the app's own
    for route in [*(r for m in (runs, shares, lessons, ops, pages) for r in m.router.routes), *app.routes]:
        if isinstance(route, Mount):
            out.append(("GET", route.path + "/missing.js"))
        elif isinstance(route, (Route, APIRoute)):
            path = re.sub(r"\{[^}]+\}", "doesnotexist", route.path)
            out.extend((m, path) for m in sorted(route.methods or ()) if m != "HEAD")
    return out


ROUTES = every_route()


def test_the_route_list_is_the_whole_app() -> None:
    paths = {p for _m, p in ROUTES}
    for path in ("/", "/s/doesnotexist", "/r/doesnotexist", "/api/runs", "/api/shares", "/healthz",
                 "/readyz", "/metrics", "/docs", "/openapi.json", "/static/missing.js", "/dist/missing.js"):
        assert path in paths, (path, sorted(paths))


def test_each_page_answer_has_its_own_style_nonce_and_no_script_nonce(api: httpx.Client) -> None:
    nonces = []
    for _ in range(2):
        r = api.get("/")
        csp = directives(r.headers["content-security-policy"])
        (nonce,) = [v for v in csp["style-src"] if v.startswith("'nonce-")]
        assert csp["script-src"] == ["'self'"]
        assert f'"style_nonce": "{nonce[7:-1]}"' in r.text  # the editor reads it from #gt-config
        nonces.append(nonce)
    assert nonces[0] != nonces[1]


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_answers_with_the_security_headers(api: httpx.Client, method: str, path: str) -> None:
    body = {"json": {"code": "print(1)"}} if method == "POST" else {}
    r = api.request(method, path, **body)
    assert r.status_code < 500, (method, path, r.status_code, r.text[:300])
    assert_strict(r.headers)


def test_answers_made_outside_the_routes_carry_them_too(api: httpx.Client) -> None:
    for r in (api.get("/no/such/page"),  # 404
              api.post("/api/runs", content=b"x", headers={"content-type": "text/plain"}),  # 415
              api.put("/api/runs", json={}),  # 405
              api.get("/static/app.css"), api.get("/dist/app.js"), api.get("/docs/assets/swagger-ui.css"),
              api.post("/api/runs", json={"code": CHAIN_RULE})):
        assert r.status_code in (200, 404, 405, 415), (r.request.url, r.status_code)
        assert_strict(r.headers)


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/docs", "/openapi.json", "/metrics", "/api/lessons",
                                  "/static/app.css", "/dist/app.js", "/docs/assets/swagger-ui-bundle.js",
                                  "/s/doesnotexist", "/api/runs/doesnotexist"])
def test_head_answers_as_get_without_a_body(api: httpx.Client, path: str) -> None:
    get = api.get(path)
    head = api.head(path)
    assert head.status_code == get.status_code != 405, (path, head.status_code, get.status_code)
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    if path.startswith(("/static", "/dist", "/docs/assets", "/api/lessons", "/openapi.json")):
        assert int(head.headers["content-length"]) == len(get.content)
    assert_strict(head.headers)


def test_head_on_a_shared_run(api: httpx.Client) -> None:
    run = api.post("/api/runs", json={"code": CHAIN_RULE}).json()
    share = api.post("/api/shares", json={"run_id": run["id"]}).json()
    for path in (f"/s/{share['id']}", f"/r/{run['id']}", f"/api/shares/{share['id']}"):
        head = api.head(path)
        assert head.status_code == 200 and head.content == b"", path
        assert_strict(head.headers)


def test_frame_ancestors_is_one_setting(start_server: Any) -> None:
    srv: Server
    with start_server({"GRADTRACE_FRAME_ANCESTORS": "'self'  https://blog.example"}) as srv, srv.client() as c:
        assert_strict(c.get("/").headers, ancestors=["'self'", "https://blog.example"])
    with pytest.raises(ValueError, match="not a CSP source list"):
        Settings(frame_ancestors="'self'; script-src *")
    with pytest.raises(ValueError, match="'none' cannot"):
        Settings(frame_ancestors="'none' https://x.example")
    assert Settings(frame_ancestors="'none'").frame_ancestors == "'none'"
