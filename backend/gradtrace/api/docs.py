"""``GET /docs``: the interactive API documentation, served offline and under the strict policy.

FastAPI's own ``/docs`` page loads Swagger UI from a CDN (blank without a network) and starts
it with an inline script (refused by NOTE [security headers] in ``security.py``). Here the
page is this module's: Swagger UI 5 (it reads the OpenAPI 3.1 document FastAPI writes; the 4.x
of ``swagger-ui-bundle`` could not) comes from the ``swagger-ui-py`` package (pinned in
pyproject.toml, its files served under ``/docs/assets``), and it is started by
``/docs/start.js``, a file, not an inline script. The validator badge (a remote service) is
off. ReDoc (also from a CDN) is not offered.
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"


def swagger_ui_dir() -> Path:
    """The directory of Swagger UI's built files inside ``swagger-ui-py`` (found, not imported:
    the package's ``__init__`` loads its web-framework adapters)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the swagger-ui-py package is not installed (pyproject.toml pins it)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def _page(title: str) -> str:
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n"
            f"<link rel=\"icon\" type=\"image/png\" href=\"{ASSETS}/favicon-32x32.png\">\n"
            f"<link rel=\"stylesheet\" href=\"{ASSETS}/swagger-ui.css\">\n"
            "</head>\n<body>\n<div id=\"swagger-ui\"></div>\n"
            f"<script src=\"{ASSETS}/swagger-ui-bundle.js\"></script>\n"
            "<script src=\"/docs/start.js\"></script>\n</body>\n</html>\n")


def _start_script(openapi_url: str) -> str:
    config = {"url": openapi_url, "dom_id": "#swagger-ui", "deepLinking": True,
              "validatorUrl": None, "showExtensions": True, "displayRequestDuration": True}
    return (f"window.ui = SwaggerUIBundle(Object.assign({json.dumps(config)}, {{\n"
            "  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],\n"
            "  layout: \"BaseLayout\",\n}));\n")


def install(app: FastAPI) -> None:
    """Add ``/docs`` and its assets to an app built with ``docs_url=None, redoc_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_dir())), name="docs-assets")
    page = _page(f"{app.title} · API")
    start = _start_script(app.openapi_url or "/openapi.json")

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    async def docs() -> HTMLResponse:
        return HTMLResponse(page)

    @app.get("/docs/start.js", include_in_schema=False)
    async def docs_start() -> Response:
        return Response(start, media_type="text/javascript")
