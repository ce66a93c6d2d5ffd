"""``POST /api/runs`` (run a snippet in the sandbox) and ``GET /api/runs/{id}``.

A run answers 200 with its run document whenever the snippet ran, whatever its status
(docs/CONTRACT.md); every refusal is a 4xx and saturation a 503 (``api/errors.py``). The
runner's :class:`~gradtrace.jobs.JobResult` is validated and carries its content id (so a share
can name it by ``run_id``): its canonical bytes are stored and answered as they are, never
parsed here. Cancellation: NOTE [cancellation] in :mod:`gradtrace.api.jobs`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import ConfigDict
from starlette.background import BackgroundTask

from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.goals import goals_answer, plan_goals
from gradtrace.api.jobs import CLIENT_CLOSED, ClientGone, new_job, run_unless_client_leaves
from gradtrace.api.responses import blob_response, json_response
from gradtrace.api.services import Services, ServicesDep
from gradtrace.errors import PoolSaturated
from gradtrace.jobs import RUN, JobResult
from gradtrace.schema import RunDocument, RunRequest
from gradtrace.storage.codec import EncodedDocument, encode_canonical

router = APIRouter(prefix="/api/runs", tags=["runs"])


class StrictRunRequest(RunRequest):
    """The run request without lax coercions: ``"seed": true`` is a 422, not seed 1."""

    model_config = ConfigDict(extra="forbid", strict=True, title="RunRequest")


@router.post("", response_model=RunDocument, summary="Run a snippet and record its autograd graph",
             responses={**ERROR_RESPONSES, 200: {"description": "The run document (any run status)"}})
async def create_run(body: StrictRunRequest, request: Request, svc: ServicesDep) -> Response:
    plan = plan_goals(body)  # an exercise's goals (api/goals.py): a malformed one is refused before the run
    job = new_job(request, svc, code=body.code, device=body.device, seed=body.seed)
    started = time.perf_counter()
    try:
        result = await run_unless_client_leaves(request, svc.require_runner().run(job))
    except ClientGone:
        svc.metrics.runs.labels("cancelled").inc()
        request.state.run_status = "cancelled"
        return Response(status_code=CLIENT_CLOSED)
    except PoolSaturated:
        svc.metrics.runs.labels("saturated").inc()
        raise
    svc.metrics.run_seconds.observe(time.perf_counter() - started)
    held = None
    if result.size + len(result.attachment or b"") <= SMALL_RUN_BYTES:  # NOTE [small runs stay on the loop]
        encoded = _encode(result)
        # NOTE [runs written behind] and [written after the answer] (storage/behind.py)
        sha = checked_sha256(result)
        if svc.store.put_run_behind(encoded, result.attachment, hold=True, tensors_sha256=sha):
            held = _release_after_answer(svc, encoded.doc_id)
        else:
            await run_in_threadpool(svc.store.put_run, encoded, result.attachment, sha)
    else:
        encoded = await run_in_threadpool(_encode_and_store, result, svc)
    svc.metrics.runs.labels(encoded.status).inc()
    request.state.run_status = encoded.status
    request.state.run_id = encoded.doc_id
    if plan is not None:
        answer = await goals_answer(request, svc, plan, encoded.raw, seed=body.seed, device=job.device)
        response = json_response(request, raw=answer, gz=None)
    else:
        response = json_response(request, raw=encoded.raw, gz=encoded.blob.gz)
    response.background = held
    return response


RELEASE_ANYWAY_S = 1.0
"""A held run is written this long after its answer was made even if the answer was never
sent (the client left): it is not kept in memory forever."""


def _release_after_answer(svc: Services, run_id: str) -> BackgroundTask:
    """Write the held run once the answer is sent (Starlette runs a response's background task
    after its last byte), or after RELEASE_ANYWAY_S whatever happens."""
    asyncio.get_running_loop().call_later(RELEASE_ANYWAY_S, svc.store.release_run, run_id)

    async def release() -> None:
        svc.store.release_run(run_id)

    return BackgroundTask(release)


@router.get("/{run_id}", response_model=RunDocument, summary="A stored run, while runs are kept",
            responses={404: ERROR_RESPONSES[404]})
def get_run(request: Request, run_id: Annotated[str, Path(max_length=64)],
            svc: ServicesDep) -> Response:
    return blob_response(request, svc.require_kept_run(run_id))


SMALL_RUN_BYTES = 64 << 10
"""NOTE [small runs stay on the loop]: a result of up to 64 KiB (the trivial run's is 4 KiB)
is gzip'd on the event loop (well under a millisecond) and written behind: a trip to the
thread pool costs more than the work; the tensor file counts in the size (it is hashed when
it is queued). Bigger ones go to the pool as before."""


def _encode_and_store(result: JobResult, svc: Services) -> EncodedDocument:
    """One trip to the thread pool for both (each trip is a GIL hand-over on the request path);
    the insert itself is written behind when it can be (NOTE [runs written behind])."""
    encoded = _encode(result)
    sha = checked_sha256(result)
    if not svc.store.put_run_behind(encoded, result.attachment, tensors_sha256=sha):
        svc.store.put_run(encoded, result.attachment, sha)
    return encoded


def checked_sha256(result: JobResult) -> str | None:
    """The tensor file's SHA-256 as this process checked it, or None (then it is hashed when
    stored). A result validated here (``result.document``: the local pool's) names its file's
    hash, and validation accepted the file only when its bytes hash to it
    (sandbox/kinds/run.py ``_checked_index``): hashing a GRU-200's file again would cost as
    much once more. A result that came through the queue was checked by its worker, in
    another process, and is hashed again here."""
    if result.attachment is None or not isinstance(result.document, dict):
        return None
    named = result.document.get("tensors")
    sha = named.get("sha256") if isinstance(named, dict) else None
    return sha if isinstance(sha, str) else None


def _encode(result: JobResult) -> EncodedDocument:
    """The runner validated the document and gave it its id (``Runner.run``): compress as is."""
    if result.kind != RUN:
        raise TypeError(f"a {result.kind!r} result is not a run document")
    return encode_canonical(result.id, result.status, result.schema_version, result.canonical)
