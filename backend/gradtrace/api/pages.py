"""The HTML pages: ``GET /`` (the playground), ``GET /s/{id}`` (a share, read-only) and
``GET /r/{id}`` (a stored run, read-only like a share, for as long as runs are kept).

Both render ``frontend/templates/index.html`` (owned by the frontend) with Jinja2. The
template context, which the page and this module agree on:

==================  ==========================================================================
``mode``            ``"edit"`` on ``/``; ``"share"`` on ``/s/{id}`` and ``/r/{id}`` (read-only,
                    never re-runs).
``document_json``   ``None`` in edit mode; in share mode the stored run document (upgraded to
                    the current schema) as canonical JSON (a current one: its stored bytes as
                    they are, NOTE [stored bytes served as they are] in ``storage/codec.py``),
                    already made safe to place inside
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
``style_nonce``     this answer's CSP nonce for the code editor's ``<style>`` (NOTE [style
                    nonce] in ``api/security.py``).
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

from gradtrace.api.security import content_security_policy, style_nonce
from gradtrace.api.services import Services, ServicesDep
from gradtrace.api.shares import shared_json
from gradtrace.frontend import DIST, STATIC, TEMPLATES
from gradtrace.lessons import all_lessons
from gradtrace.schema import canonical_json
from gradtrace.storage.codec import current_json
from gradtrace.version import __version__

router = APIRouter(include_in_schema=False)
TEMPLATE = "index.html"
_templates = Jinja2Templates(directory=str(TEMPLATES))
_SCRIPT_SAFE = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def script_safe(raw: bytes) -> Markup:
    """JSON text that can sit inside a ``<script>`` element as is (see the module docstring).

    Each of these characters can only stand inside a JSON string (none is JSON syntax), where
    its ``\\uXXXX`` escape is the same string; the bytes are rewritten as they are (a 4 MB
    document is never parsed for the page). U+2028 and U+2029 are three UTF-8 bytes each, which
    no other character's encoding contains."""
    for char, escape in _SCRIPT_SAFE:
        if char in raw:
            raw = raw.replace(char, escape)
    return Markup(raw.decode("utf-8"))


def script_safe_json(obj: Any) -> Markup:
    """``obj`` as canonical JSON, made script-safe (:func:`script_safe`)."""
    return script_safe(canonical_json(obj))


@router.get("/", response_class=HTMLResponse)
def index(request: Request, svc: ServicesDep) -> Response:
    return _render(request, svc, mode="edit", document=None, share_id=None)


@router.get("/s/{share_id}", response_class=HTMLResponse)
async def share_page(request: Request, share_id: Annotated[str, Path(max_length=64)],
                     svc: ServicesDep) -> Response:
    document = await run_in_threadpool(shared_json, svc, share_id)
    return _render(request, svc, mode="share", document=document, share_id=share_id)


@router.get("/r/{run_id}", response_class=HTMLResponse)
async def run_page(request: Request, run_id: Annotated[str, Path(max_length=64)],
                   svc: ServicesDep) -> Response:
    """A stored run's page: what the notebook links to instead of the run's raw JSON."""
    document = await run_in_threadpool(kept_run_json, svc, run_id)
    return _render(request, svc, mode="share", document=document, share_id=None, run_id=run_id)


def kept_run_json(svc: Services, run_id: str) -> bytes:
    """A run kept by the service (``GET /api/runs/{id}``'s rules) as canonical JSON of the
    current schema (NOTE [stored bytes served as they are] in ``storage/codec.py``)."""
    return current_json(svc.require_kept_run(run_id))


def _render(request: Request, svc: Services, *, mode: str, document: bytes | None,
            share_id: str | None, run_id: str | None = None) -> Response:
    state = svc.runner_state()
    limits = svc.page_limits()
    nonce = style_nonce()  # NOTE [style nonce] (api/security.py)
    headers = {"Content-Security-Policy": content_security_policy(svc.settings.frame_ancestors, style_nonce=nonce)}
    context: dict[str, Any] = {
        "mode": mode,
        "document_json": script_safe(document) if document is not None else None,
        "share_id": share_id,
        "run_id": run_id,
        "share_url": f"{svc.public_base(request)}/s/{share_id}" if share_id else None,
        "cuda_available": bool(state.cuda_available) if state else False,
        "limits": limits,
        "limits_json": script_safe_json(limits),
        "version": __version__,
        "lessons_json": script_safe_json([lesson.as_json() for lesson in all_lessons()]),
        "style_nonce": nonce,
    }
    if not (TEMPLATES / TEMPLATE).is_file():
        return HTMLResponse(_fallback_page(context), headers=headers)
    return _templates.TemplateResponse(request, TEMPLATE, context, headers=headers)


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



