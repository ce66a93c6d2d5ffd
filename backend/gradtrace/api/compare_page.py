"""The compare page ``GET /c/{a}..{b}``: two runs side by side, one transport, their comparison.

``a`` and ``b`` are share ids (a compare link, ``POST /api/compare/links``, names two shares,
kept forever) or ids of runs still kept. The page is ``frontend/templates/compare.html``, drawn
by ``/dist/compare.js`` (``frontend/src/compare/``). The page carries the two documents as
stored (no parse here); it asks ``GET /api/compare/{a}..{b}`` for their comparison while it
lays both graphs out, so the first frame waits for the larger of the two, not their sum.
Template context:

====================  ======================================================================
``a_json``/``b_json`` the two run documents (upgraded to the current schema), script-safe JSON
``a_id``/``b_id``     the ids of the link
``config_json``       ``{"cuda_available", "version", "a", "b"}`` for the presets
``version``           gradtrace's version string
====================  ======================================================================
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response
from fastapi.templating import Jinja2Templates

from gradtrace.api.compare import CompareSide, split_pair, stored_json
from gradtrace.api.pages import script_safe, script_safe_json
from gradtrace.api.services import Services, ServicesDep
from gradtrace.frontend import TEMPLATES
from gradtrace.version import __version__

router = APIRouter(include_in_schema=False)
TEMPLATE = "compare.html"
_templates = Jinja2Templates(directory=str(TEMPLATES))


@router.get("/c/{pair}", response_class=HTMLResponse)
async def compare_page(request: Request, pair: Annotated[str, Path(max_length=130)],
                       svc: ServicesDep) -> Response:
    a_id, b_id = split_pair(pair)
    context = await run_in_threadpool(_context, svc, a_id, b_id)
    return _templates.TemplateResponse(request, TEMPLATE, context)


def _context(svc: Services, a_id: str, b_id: str) -> dict[str, Any]:
    raw_a, raw_b = (stored_json(svc, CompareSide(share_id=i), side) for i, side in ((a_id, "a"), (b_id, "b")))
    state = svc.runner_state()
    config = {"cuda_available": bool(state.cuda_available) if state else False, "version": __version__,
              "a": a_id, "b": b_id}
    return {"a_json": script_safe(raw_a), "b_json": script_safe(raw_b), "a_id": a_id, "b_id": b_id,
            "config_json": script_safe_json(config), "version": __version__}
