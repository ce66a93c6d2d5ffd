"""``/docs`` works offline: Swagger UI's assets come from the service, never from a CDN."""

from __future__ import annotations

import re

import httpx


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
