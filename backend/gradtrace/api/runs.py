"""``POST /api/runs`` (run a snippet in the sandbox) and ``GET /api/runs/{id}``.

A run answers 200 with its run document whenever the snippet ran, whatever its status
(docs/CONTRACT.md); every refusal is a 4xx and saturation a 503 (``api/errors.py``). The document
is validated, given its content id, stored (so a share can name it by ``run_id``), and
answered as the same canonical bytes that were stored.

NOTE [cancellation]
    The handler races the job against the client's ``http.disconnect``: when the client goes
    away first (the page's Cancel button aborts its fetch, a notebook is interrupted), the
    job's task is cancelled, which makes the runner kill the job before ``run`` returns, so no
    worker keeps computing for nobody. Nothing is stored and nothing is sent; the access log
    records status 499 and the metrics a ``cancelled`` run.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import ConfigDict, ValidationError

from gradtrace.api.errors import ERROR_RESPONSES
from gradtrace.api.responses import blob_response, json_response
from gradtrace.api.services import Services, ServicesDep, client_key, code_hash
from gradtrace.errors import InvalidRequest, NotFound, PayloadTooLarge, PoolSaturated
from gradtrace.sandbox.runner import Job, Runner
from gradtrace.schema import RunDocument, RunRequest
from gradtrace.storage.codec import EncodedDocument, encode, encode_validated

router = APIRouter(prefix="/api/runs", tags=["runs"])
CLIENT_CLOSED = 499


class StrictRunRequest(RunRequest):
    """The run request without lax coercions: ``"seed": true`` is a 422, not seed 1."""

    model_config = ConfigDict(extra="forbid", strict=True, title="RunRequest")


class ClientGone(Exception):
    """The client disconnected before its run ended."""


@router.post("", response_model=RunDocument, summary="Run a snippet and record its autograd graph",
             responses={**ERROR_RESPONSES, 200: {"description": "The run document (any run status)"}})
async def create_run(body: StrictRunRequest, request: Request, svc: ServicesDep) -> Response:
    client = client_key(request)
    svc.buckets.take(client)
    _check_code(body.code, svc.settings.max_code_kb)
    request.state.code_sha256 = code_hash(body.code)
    runner = svc.require_runner()
    device = svc.resolve_device(runner, body.device)
    job = Job(code=body.code, device=device, seed=body.seed, limits=svc.limits)
    started = time.perf_counter()
    try:
        doc = await _run_unless_client_leaves(request, _fair_run(svc, client, runner, job))
    except ClientGone:
        svc.metrics.runs.labels("cancelled").inc()
        request.state.run_status = "cancelled"
        return Response(status_code=CLIENT_CLOSED)
    except PoolSaturated:
        svc.metrics.runs.labels("saturated").inc()
        raise
    svc.metrics.run_seconds.observe(time.perf_counter() - started)
    if _is_small(doc):  # NOTE [small runs stay on the loop]
        encoded = _encode_from_runner(doc)
        if not svc.store.put_run_behind(encoded):  # NOTE [runs written behind] (storage)
            await run_in_threadpool(svc.store.put_run, encoded)
    else:
        encoded = await run_in_threadpool(_encode_and_store, doc, svc)
    svc.metrics.runs.labels(encoded.status).inc()
    request.state.run_status = encoded.status
    request.state.run_id = encoded.doc_id
    return json_response(request, raw=encoded.raw, gz=encoded.blob.gz)


@router.get("/{run_id}", response_model=RunDocument, summary="A stored run, while runs are kept",
            responses={404: ERROR_RESPONSES[404]})
def get_run(request: Request, run_id: Annotated[str, Path(max_length=64)],
            svc: ServicesDep) -> Response:
    days = svc.settings.run_retention_days
    blob = svc.store.get_run(run_id, max_age_s=days * 86400.0 if days else None)
    if blob is None:
        kept = f"runs are kept {days} days" if days else "runs are kept forever"
        raise NotFound(f"no run with id {run_id!r} ({kept}; share a run to keep it)",
                       detail={"run_id": run_id})
    return blob_response(request, blob)


def _check_code(code: str, max_code_kb: int) -> None:
    if "\x00" in code:
        raise InvalidRequest("code contains a NUL character; send the snippet as plain text",
                             detail={"field": "code"})
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidRequest("code is not valid Unicode text (it contains a lone surrogate)",
                             detail={"field": "code", "position": exc.start}) from exc
    limit = max_code_kb * 1024
    if size > limit:
        raise PayloadTooLarge(f"code is {size} bytes, over the limit of {limit} bytes ({max_code_kb} KiB)",
                              detail={"field": "code", "size_bytes": size, "limit_bytes": limit})


SMALL_RUN_BYTES = 64 << 10


def _is_small(doc: dict[str, Any]) -> bool:
    """NOTE [small runs stay on the loop]: a result of up to 64 KiB (the trivial run's is 4 KiB)
    is gzip'd on the event loop (well under a millisecond) and written behind: a trip to the
    thread pool costs more than the work. Bigger ones go to the pool as before."""
    canonical = getattr(doc, "canonical", None)
    return isinstance(canonical, bytes) and len(canonical) <= SMALL_RUN_BYTES


def _encode_and_store(doc: dict[str, Any], svc: Services) -> EncodedDocument:
    """One trip to the thread pool for both (each trip is a GIL hand-over on the request path);
    the insert itself is written behind when it can be (NOTE [runs written behind])."""
    encoded = _encode_from_runner(doc)
    if not svc.store.put_run_behind(encoded):
        svc.store.put_run(encoded)
    return encoded


def _encode_from_runner(doc: dict[str, Any]) -> EncodedDocument:
    """The runner answers validated, fully defaulted documents (``Runner.run``): encode as is."""
    try:
        return encode_validated(doc)
    except (ValidationError, ValueError, TypeError, RecursionError) as exc:
        # Reaching this is a runner bug; it is reported as a crashed run rather than a 500 so
        # that the user still gets an answer.
        return encode({"id": "", "status": "crashed", "message": f"the run returned an invalid document: "
                       f"{type(exc).__name__}", "code": doc.get("code") if isinstance(doc, dict) else None})


async def _fair_run(svc: Services, client: str, runner: Runner, job: Job) -> dict[str, Any]:
    """The job, run when it is ``client``'s turn (NOTE [fair shares] in ``api/fairshare.py``)."""
    if svc.fair is None:
        return await runner.run(job)
    async with svc.fair.turn(client):
        return await runner.run(job)


async def _run_unless_client_leaves(request: Request, job: Any) -> dict[str, Any]:
    run_task: asyncio.Task[dict[str, Any]] = asyncio.ensure_future(job)
    watch_task = asyncio.ensure_future(_wait_for_disconnect(request))
    try:
        done, _ = await asyncio.wait({run_task, watch_task}, return_when=asyncio.FIRST_COMPLETED)
        if run_task in done:
            return run_task.result()
        raise ClientGone
    finally:
        watch_task.cancel()
        if not run_task.done():
            run_task.cancel()
            # Wait until the runner has killed the job; its outcome no longer matters.
            await asyncio.gather(run_task, return_exceptions=True)


async def _wait_for_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
