"""What every job route shares: checking the code, building the :class:`~gradtrace.jobs.Job`,
and awaiting the runner unless the client leaves (NOTE [adding a job kind] in
:mod:`gradtrace.jobs`: a new kind's route is these three calls around its own models).

NOTE [cancellation]
    The handler races the job against the client's ``http.disconnect``: when the client goes
    away first (the page's Cancel button aborts its fetch, a notebook is interrupted), the
    job's task is cancelled, which makes the runner kill the job before ``run`` returns, so no
    worker keeps computing for nobody. Nothing is stored and nothing is sent; the access log
    records status 499 and the metrics a ``cancelled`` run.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any

from fastapi import Request

from gradtrace.api.services import Services, client_key, code_hash
from gradtrace.errors import InvalidRequest, PayloadTooLarge
from gradtrace.jobs import RUN, Job, JobResult, Params

CLIENT_CLOSED = 499


class ClientGone(Exception):
    """The client disconnected before its job ended."""


def new_job(request: Request, svc: Services, *, code: str, device: str, seed: int | None, kind: str = RUN,
            params: Params | None = None) -> Job:
    """A job for this request: rate limit, code checks, device resolved by the runner;
    ``params`` is the kind's typed model (NOTE [adding a job kind] in :mod:`gradtrace.jobs`)."""
    svc.buckets.take(client_key(request))
    check_code(code, svc.settings.max_code_kb)
    request.state.code_sha256 = code_hash(code)
    runner = svc.require_runner()
    return Job(kind=kind, code=code, device=svc.resolve_device(runner, device), seed=seed,
               limits=svc.limits, params=params or Params())


def check_code(code: str, max_code_kb: int) -> None:
    """A 4xx for code that is not plain text or is over ``max_code_kb``."""
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


async def run_unless_client_leaves(request: Request, job: Awaitable[JobResult]) -> JobResult:
    """The runner's result, or :class:`ClientGone` once the job was killed (NOTE [cancellation]).

    The job starts when it is the client's turn (NOTE [fair shares] in ``api/fairshare.py``)."""
    run_task: asyncio.Future[JobResult] = asyncio.ensure_future(_in_turn(request, job))
    watch_task: asyncio.Future[Any] = asyncio.ensure_future(_wait_for_disconnect(request))
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


async def _in_turn(request: Request, job: Awaitable[JobResult]) -> JobResult:
    svc = request.app.state.services
    if not isinstance(svc, Services) or svc.fair is None:
        return await job
    try:
        async with svc.fair.turn(client_key(request)):
            return await job
    finally:
        if inspect.iscoroutine(job):
            job.close()  # refused or cancelled before its turn: it never started


async def _wait_for_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
