"""``/docs`` works offline: Swagger UI's assets come from the service, never from a CDN."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest


def test_docs_page_loads_swagger_ui_from_the_service_itself(api: httpx.Client) -> None:
    page = api.get("/docs")
    assert page.status_code == 200
    refs = [a or b for a, b in re.findall(r"""(?:src|href)=["']([^"']+)["']|url: ?['"]([^'"]+)['"]""", page.text)]
    assert len(refs) >= 3, page.text  # the script, the stylesheet, the OpenAPI document
    assert all(r.startswith("/") and not r.startswith("//") for r in refs), refs
    assert "cdn" not in page.text.lower()
    for ref in refs:
        got = api.get(ref)
        assert got.status_code == 200 and len(got.content) > 100, ref
    assert "SwaggerUIBundle" in api.get("/docs/assets/swagger-ui-bundle.js").text
    assert api.get("/redoc").status_code == 404


@pytest.mark.browser
def test_docs_render_the_whole_api_and_the_run_request_schema(browser: Any, live_server: Any,
                                                              artifacts_dir: Path) -> None:
    """Swagger UI 5 reads FastAPI's OpenAPI 3.1 document: every operation is listed, and
    ``POST /api/runs`` opens on its request schema (the 4.x it replaced showed "Unable to render
    this definition")."""
    spec = httpx.get(live_server.url + "/openapi.json", timeout=30).json()
    assert spec["openapi"].startswith("3.1")
    context = browser.new_context(offline=False, viewport={"width": 1280, "height": 1000})
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    try:
        page.goto(live_server.url + "/docs")
        post = page.locator("#operations-runs-create_run_api_runs_post")
        post.wait_for(timeout=30_000)
        assert "Unable to render" not in page.content()
        operations = {(m.lower(), p) for p, ops in spec["paths"].items() for m in ops}
        shown = page.locator(".opblock").count()
        assert shown == len(operations), (shown, sorted(operations))
        assert "/api/runs" in post.locator(".opblock-summary-path").inner_text()
        post.locator(".opblock-summary-control").click()
        body = post.locator(".opblock-section-request-body")
        body.wait_for(timeout=10_000)
        body.get_by_text("Schema", exact=True).click()
        model = body.locator(".model-box")
        model.first.wait_for(timeout=10_000)
        text = model.first.inner_text()
        for field in ("code", "device", "seed"):
            assert field in text, text
        page.screenshot(path=str(artifacts_dir / "docs-post-runs.png"), full_page=False)
    finally:
        context.close()
    outside = [u for u in requests if not u.startswith(live_server.url)]
    assert outside == [], outside
