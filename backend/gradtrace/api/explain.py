"""``GET /api/runs/{id}/explain``: a backward node's local rule with the recorded numbers.

Computed on request from the stored document (NOTE [explain on request] in
``analysis/explain/node.py``): one node, one element, a few microseconds to milliseconds. The
numbers the document does not carry inline come from the run's stored tensor file, read by
range: its header, then only the tensors the rule reads (NOTE [judges read the tensor file by
range] in ``analysis/kept.py``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from gradtrace.analysis.explain import carried_explanations, explain_node
from gradtrace.analysis.kept import KeptTensors
from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.kept_files import kept_tensors
from gradtrace.api.services import Services, ServicesDep
from gradtrace.errors import InvalidRequest
from gradtrace.schema.explain import Explanation

router = APIRouter(tags=["explain"])
_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES, 200: {"description": "The node's rule per input, worked out at one element"}}


def _index(text: str | None) -> list[int] | None:
    if text is None or text == "":
        return None
    try:
        index = [int(part) for part in text.split(",")]
    except ValueError:
        raise InvalidRequest("index is the element's coordinates, comma-separated: 1,2",
                             detail={"field": "index"}) from None
    if len(index) > 16 or any(i < 0 for i in index):
        raise InvalidRequest("index has at most 16 non-negative coordinates", detail={"field": "index"})
    return index


@router.get("/api/runs/{run_id}/explain", response_model=Explanation, responses=_RESPONSES,
            summary="Explain a backward node: its local rule, with the recorded numbers")
def explain(run_id: Annotated[str, Path(max_length=64)], svc: ServicesDep,
            node: Annotated[str, Query(max_length=32)],
            pass_: Annotated[int | None, Query(alias="pass", ge=0)] = None,
            index: Annotated[str | None, Query(max_length=200)] = None) -> Response:
    doc = svc.documents.get(svc.require_kept_run(run_id, instead="run the snippet again to explain it"))
    found = explain_node(doc, node, pass_, _index(index), run_tensors(svc, run_id))
    answer = Explanation.model_validate(found)
    return Response(answer.model_dump_json(by_alias=True).encode(), media_type="application/json")


@router.get("/api/runs/{run_id}/explanations", responses={**ERROR_RESPONSES, 200: {"description": "The bundle"}},
            summary="Every backward node's explanation, as a saved HTML file carries them")
def explanations(run_id: Annotated[str, Path(max_length=64)], svc: ServicesDep) -> Response:
    """What Export → HTML on the page embeds (NOTE [explanations carried offline] in
    ``analysis/explain/offline.py``): bounded by its byte budget."""
    doc = svc.documents.get(svc.require_kept_run(run_id, instead="run the snippet again to explain it"))
    carried = carried_explanations(doc, tensors=run_tensors(svc, run_id))
    body = json.dumps(carried, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, media_type="application/json")


def run_tensors(svc: Services, run_id: str) -> KeptTensors | None:
    """The stored run's tensor file, read by range (None when it kept none)."""
    return kept_tensors(svc.store.run_tensors(run_id, max_age_s=svc.run_retention_s))
