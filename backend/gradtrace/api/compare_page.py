"""The compare page ``GET /c/{a}..{b}``: two runs side by side, one transport, their comparison.

``a`` and ``b`` are share ids (a compare link, ``POST /api/compare/links``, names two shares,
kept forever) or ids of runs still kept. The page is ``frontend/templates/compare.html``, drawn
by ``/dist/compare.js`` (``frontend/src/compare/``).

NOTE [comparison started with the page]
    The page is small: it names the two documents' URLs (``/api/shares/{id}`` or
    ``/api/runs/{id}``, served as stored, gzip) and the browser fetches both and the comparison
    (``GET /api/compare/{a}..{b}``) at once, instead of parsing two 4 MB documents inlined in
    the HTML before its script can start. The comparison itself is started here, in the
    background, as soon as the page is asked for: the page's own request for it joins the one
    already being made (single flight, NOTE [comparison caches] in ``api/compare_cache.py``),
    so it is ready about when both panes have drawn their first frame.

Template context:

====================  ======================================================================
``a_url``/``b_url``   where the page fetches each run document (a share's or a kept run's)
``a_id``/``b_id``     the ids of the link
``config_json``       ``{"cuda_available", "version", "a", "b", "docs": {"a", "b"}}``
``version``           gradtrace's version string
====================  ======================================================================
"""

from __future__ import annotations

import contextlib
import threading
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from gradtrace.api.compare import compare_answer, document_url, split_pair
from gradtrace.api.pages import script_safe_json
from gradtrace.api.services import Services, ServicesDep
from gradtrace.frontend import TEMPLATES
from gradtrace.schema.compare import CompareSide
from gradtrace.version import __version__

router = APIRouter(include_in_schema=False)
TEMPLATE = "compare.html"
_templates = Jinja2Templates(directory=str(TEMPLATES))


@router.get("/c/{pair}", response_class=HTMLResponse)
async def compare_page(request: Request, pair: Annotated[str, Path(max_length=130)],
                       svc: ServicesDep) -> Response:
    a_id, b_id = split_pair(pair)
    context = await run_in_threadpool(_context, svc, a_id, b_id)
    _start_comparison(svc, a_id, b_id)
    return _templates.TemplateResponse(request, TEMPLATE, context)


def _context(svc: Services, a_id: str, b_id: str) -> dict[str, Any]:
    urls = [document_url(svc, CompareSide(share_id=i), side) for i, side in ((a_id, "a"), (b_id, "b"))]
    state = svc.runner_state()
    config = {"cuda_available": bool(state.cuda_available) if state else False, "version": __version__,
              "a": a_id, "b": b_id, "docs": {"a": urls[0], "b": urls[1]}}
    return {"a_url": urls[0], "b_url": urls[1], "a_id": a_id, "b_id": b_id,
            "config_json": script_safe_json(config), "version": __version__}


_WARMING = threading.BoundedSemaphore(2)
"""At most two comparisons started by pages at once: beyond that a page's own request makes it."""


def _start_comparison(svc: Services, a_id: str, b_id: str) -> None:
    """NOTE [comparison started with the page]: its failure is the page's request's to report."""
    if not _WARMING.acquire(blocking=False):
        return

    def warm() -> None:
        try:
            with contextlib.suppress(Exception):
                compare_answer(svc, CompareSide(share_id=a_id), CompareSide(share_id=b_id))
        finally:
            _WARMING.release()
    threading.Thread(target=warm, name="compare-warm", daemon=True).start()
