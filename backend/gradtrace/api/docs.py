"""``GET /docs``: the interactive API documentation, served offline.

FastAPI's own ``/docs`` page loads Swagger UI from a CDN, so it is blank on a machine without
network. Here the same page takes Swagger UI's script and stylesheet from the
``swagger-ui-bundle`` package (pinned in pyproject.toml), served under ``/docs/assets``.
ReDoc (also from a CDN) is not offered.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

ASSETS = "/docs/assets"


def install(app: FastAPI) -> None:
    """Add ``/docs`` and its assets to an app built with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} · API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        )
