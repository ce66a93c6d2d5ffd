"""The HTML pages: ``GET /`` (the playground), ``GET /s/{id}`` (a share, read-only) and
``GET /r/{id}`` (a stored run, read-only like a share, for as long as runs are kept).

Both render ``frontend/templates/index.html`` (owned by the frontend) with Jinja2. The
template context, which the page and this module agree on:

==================  ==========================================================================
``mode``            ``"edit"`` on ``/``; ``"share"`` on ``/s/{id}`` and ``/r/{id}`` (read-only,
                    never re-runs).
``document_json``   ``None`` in edit mode; in share mode the stored run document (upgraded to
                    the current schema) as canonical JSON, already made safe to place inside
                    ``<script type="application/json" id="...">{{ document_json }}</script>``:
                    ``<``, ``>``, ``&``, U+2028 and U+2029 are written as ``\\uXXXX`` escapes
                    (still the same JSON) and the value is marked safe, so autoescaping leaves
                    it alone. Read it with ``JSON.parse(el.textContent)``.
``share_id``        the share id on ``/s/{id}``, else ``None``.
``run_id``          the run id on ``/r/{id}``, else ``None``.
``share_url``       the absolute link of the share in share mode, else ``None``.
``cuda_available``  whether ``device: "cuda"`` / ``"auto"`` can use a GPU here (bool).
``limits``          dict: ``max_code_kb``, ``timeout_s``, ``cpu_s``, ``memory_mb``,
                    ``output_kb``, ``max_nodes``, ``max_events``.
``version``         gradtrace's version string.
``limits_json``     ``limits`` as a script-safe JSON string (same escaping as above).
``lessons_json``    the lessons (:mod:`gradtrace.lessons`: number, id, stem, title, intro, code) as a
                    script-safe JSON list, for the gallery.
==================  ==========================================================================

Static files: ``/static/...`` from ``gradtrace.frontend.STATIC`` and ``/dist/...`` (the
esbuild bundle) from ``gradtrace.frontend.DIST``. A checkout where the bundle has not been
built yet still serves the page (``/dist/*`` answers 404); a checkout without the template
gets a minimal page that says so, never a 500.
"""

from __future__ import annotations

import html
import os
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from gradtrace.api.services import Services, ServicesDep
from gradtrace.api.shares import shared_document
from gradtrace.frontend import DIST, STATIC, TEMPLATES
from gradtrace.lessons import all_lessons
from gradtrace.schema import canonical_json
from gradtrace.storage.codec import load
from gradtrace.version import __version__

router = APIRouter(include_in_schema=False)
TEMPLATE = "index.html"
_templates = Jinja2Templates(directory=str(TEMPLATES))
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                              "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_safe_json(obj: Any) -> Markup:
    """JSON that can sit inside a ``<script>`` element as is (see the module docstring)."""
    return Markup(canonical_json(obj).decode("utf-8").translate(_SCRIPT_SAFE))


@router.get("/", response_class=HTMLResponse)
def index(request: Request, svc: ServicesDep) -> Response:
    return _render(request, svc, mode="edit", document=None, share_id=None)


@router.get("/s/{share_id}", response_class=HTMLResponse)
async def share_page(request: Request, share_id: Annotated[str, Path(max_length=64)],
                     svc: ServicesDep) -> Response:
    document = await run_in_threadpool(shared_document, svc, share_id)
    return _render(request, svc, mode="share", document=document, share_id=share_id)


@router.get("/r/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: Annotated[str, Path(max_length=64)],
                   svc: ServicesDep) -> Response:
    """A stored run's page: what the notebook links to instead of the run's raw JSON."""
    document = await run_in_threadpool(kept_run_document, svc, run_id)
    return _render(request, svc, mode="share", document=document, share_id=None, run_id=run_id)


def kept_run_document(svc: Services, run_id: str) -> dict[str, Any]:
    """A run kept by the service (``GET /api/runs/{id}``'s rules), upgraded to the current schema."""
    return load(svc.require_kept_run(run_id))


def _render(request: Request, svc: Services, *, mode: str, document: dict[str, Any] | None,
            share_id: str | None, run_id: str | None = None) -> Response:
    state = svc.runner_state()
    limits = svc.page_limits()
    context: dict[str, Any] = {
        "mode": mode,
        "document_json": script_safe_json(document) if document is not None else None,
        "share_id": share_id,
        "run_id": run_id,
        "share_url": f"{svc.public_base(request)}/s/{share_id}" if share_id else None,
        "cuda_available": bool(state.cuda_available) if state else False,
        "limits": limits,
        "limits_json": script_safe_json(limits),
        "version": __version__,
        "lessons_json": script_safe_json([lesson.as_json() for lesson in all_lessons()]),
    }
    if not (TEMPLATES / TEMPLATE).is_file():
        return HTMLResponse(_fallback_page(context))
    return _templates.TemplateResponse(request, TEMPLATE, context)


def _fallback_page(context: dict[str, Any]) -> str:
    doc = context["document_json"]
    body = f'<script type="application/json" id="gradtrace-document">{doc}</script>' if doc else ""
    return ("<!doctype html><meta charset=utf-8><title>gradtrace</title>"
            f"<p>gradtrace {html.escape(context['version'])}: the page template is not installed "
            f"in this checkout ({html.escape(TEMPLATE)}); the API is at <a href=/docs>/docs</a>.</p>"
            f"{body}")


class OptionalStaticFiles(StaticFiles):
    """StaticFiles that answers 404 (not a 500) while its directory does not exist yet."""

    async def check_config(self) -> None:
        if self.directory is not None and not os.path.isdir(self.directory):
            return
        await super().check_config()


def mount_static(app: Any) -> None:
    app.mount("/static", OptionalStaticFiles(directory=str(STATIC), check_dir=False), name="static")
    app.mount("/dist", OptionalStaticFiles(directory=str(DIST), check_dir=False), name="dist")



