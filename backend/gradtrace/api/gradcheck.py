"""``POST /api/runs/{id}/gradcheck`` (check a node of a stored run) and ``POST /api/gradcheck``
(check a snippet): a numerical gradient check as a sandbox job of kind ``gradcheck``
(``sandbox/kinds/gradcheck.py``; NOTE [adding a job kind] in ``gradtrace/jobs.py``).

The run route reads the stored run's code and seed (the snippet re-runs exactly as it ran),
turns the clicked node into a target (``analysis/gradcheck/runs.py``) and puts the answer's
suspect back on the run's node ids. Each route serves the answer's canonical bytes, whose
``id`` is their hash (NOTE [the answer's bytes] in ``analysis/gradcheck/answer.py``).
``mode: forward`` checks a custom Function's ``jvp`` instead (the node must be one, or the
target of kind ``function``). A node that cannot be checked, a target that is not in the
program, or too many elements is a 4xx; a snippet that cannot be re-run deterministically,
or that hits a sandbox limit, is a 200 with verdict ``inconclusive`` and the reason.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import ConfigDict

from gradtrace.analysis.gradcheck import (
    for_the_rerun,
    forward_target,
    place_on_run,
    spec_for_target,
    target_for_node,
)
from gradtrace.analysis.gradcheck.answer import answer_bytes, read_answer
from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.jobs import CLIENT_CLOSED, ClientGone, new_job, run_unless_client_leaves
from gradtrace.api.services import ServicesDep
from gradtrace.errors import InvalidRequest
from gradtrace.jobs import GRADCHECK
from gradtrace.sandbox.kinds.gradcheck import GradcheckParams
from gradtrace.schema.gradcheck import CodeGradcheckRequest, GradcheckRequest, GradcheckResult, Mode, TargetSpec

router = APIRouter(tags=["gradcheck"])
TIME_SHARE = 0.6
"""Of the sandbox's time limit, what the re-runs plan to use (the check checks fewer elements
rather than run into the limit; the rest is slack for the suspect search and a slow machine)."""


class StrictGradcheckRequest(GradcheckRequest):
    model_config = ConfigDict(extra="forbid", strict=True, title="GradcheckRequest")


class StrictCodeGradcheckRequest(CodeGradcheckRequest):
    model_config = ConfigDict(extra="forbid", strict=True, title="CodeGradcheckRequest")


_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES, 200: {"description": "The check: a verdict (pass, fail, inconclusive) with its reasons"}}


@router.post("/api/runs/{run_id}/gradcheck", response_model=GradcheckResult, responses=_RESPONSES,
             summary="Check a leaf, every parameter or a custom Function of a stored run numerically")
async def check_run(run_id: Annotated[str, Path(max_length=64)], body: StrictGradcheckRequest, request: Request,
                    svc: ServicesDep) -> Response:
    doc = svc.documents.get(svc.require_kept_run(run_id, instead="run the snippet again to check it"))
    if body.node is not None and body.target is not None:
        raise InvalidRequest("give either a node or a target, not both", detail={"field": "node"})
    if body.mode == "forward":
        if body.pass_index is not None:
            raise InvalidRequest("forward mode counts a Function's calls from the snippet's start, in no "
                                 "backward pass: leave pass_index out", detail={"field": "pass_index"})
        spec = forward_target(doc, body.node, body.target)
    elif body.node is not None:
        spec = target_for_node(doc, body.node, body.pass_index)
    elif body.target is not None:
        spec = body.target
        if body.pass_index is not None:
            if spec.pass_index not in (None, body.pass_index):
                raise InvalidRequest("give the pass once: pass_index and target.pass_index differ",
                                     detail={"field": "pass_index"})
            spec = spec.model_copy(update={"pass_index": body.pass_index})
        spec = spec_for_target(doc, spec)
    else:
        raise InvalidRequest("say what to check: a node of the run, or a target "
                             '({"kind": "leaf", "name": "x"}, {"kind": "parameters"}, {"kind": "function", ...})',
                             detail={"field": "node"})
    if body.mode == "backward":
        spec = for_the_rerun(doc, spec)
    seed = doc.get("seed")
    raw = await _check(request, svc, code=str(doc.get("code") or ""), seed=seed if isinstance(seed, int) else None,
                          target=spec, max_elements=body.max_elements, sample_seed=body.seed or 0,
                          mode=body.mode)
    if raw is None:
        return Response(status_code=CLIENT_CLOSED)
    answer = read_answer(raw)  # the one place the run's node ids and id are added: written again
    place_on_run(doc, answer)
    answer.run_id = run_id
    return Response(answer_bytes(answer), media_type="application/json")


@router.post("/api/gradcheck", response_model=GradcheckResult, responses=_RESPONSES,
             summary="Check a snippet's gradient numerically (no stored run needed)")
async def check_code(body: StrictCodeGradcheckRequest, request: Request, svc: ServicesDep) -> Response:
    raw = await _check(request, svc, code=body.code, seed=body.seed, target=body.target,
                       max_elements=body.max_elements, sample_seed=body.seed, mode=body.mode)
    if raw is None:
        return Response(status_code=CLIENT_CLOSED)
    return Response(raw, media_type="application/json")  # served as the kind wrote it


async def _check(request: Request, svc: ServicesDep, *, code: str, seed: int | None, target: TargetSpec,
                 max_elements: int, sample_seed: int, mode: Mode = "backward") -> bytes | None:
    """Run the job: the answer's bytes as the kind wrote them (NOTE [the answer's bytes] in
    ``analysis/gradcheck/answer.py``), read only for a refusal; None when the client left."""
    job = new_job(request, svc, code=code, device="cpu", seed=seed, kind=GRADCHECK,
                  params=GradcheckParams(target=target, max_elements=max_elements, sample_seed=sample_seed,
                                         time_budget_s=TIME_SHARE * svc.limits.timeout_s, mode=mode))
    try:
        answer = await run_unless_client_leaves(request, svc.require_runner().run(job))
    except ClientGone:
        request.state.run_status = "cancelled"
        return None
    request.state.run_status = answer.status
    if answer.status == "refused":
        raise InvalidRequest(read_answer(answer.canonical).message or "the target is not in the program",
                             detail={"target": target.model_dump()})
    return answer.canonical
