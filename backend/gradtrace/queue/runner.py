"""The API side of the queue: enqueue a job for its device and wait for its document.

Holds no state of its own beyond a cached snapshot of the registry (NOTE [worker registry] in
:mod:`gradtrace.queue.keys`), refreshed twice a second for ``/healthz`` and ``/metrics``.

NOTE [queue semantics]
    * Bounded: a job is refused with 503 and ``Retry-After`` when the jobs already waiting for
      its device (queued beyond the slots taking jobs) reach ``GRADTRACE_QUEUE_SIZE``; the check
      never blocks, and it is one atomic step with the enqueue (NOTE [hard queue bound] in
      :mod:`gradtrace.queue.admission`), so concurrent requests on any number of replicas never
      overshoot it.
    * Draining: a worker that got SIGTERM stays in the registry marked ``draining`` until its
      running jobs end (NOTE [drain on SIGTERM] in :mod:`gradtrace.queue.worker`); its slots no
      longer count as capacity, but its running jobs still count as running, not waiting.
    * Deadline: a job is enqueued with arq's ``_expires`` set to ``GRADTRACE_QUEUE_WAIT_S``. A
      worker that picks it up later finds it expired and drops it unrun; the request has
      already answered 503 at that deadline (and aborted the job, which drops it as well).
    * Cancel: when the request's task is cancelled (client gone), the job is aborted; the
      worker cancels its task, the pool kills the jailed child, the slot is free.
    * Crash: while a job runs, its worker's registry key must stay alive; when it expires the
      request answers ``crashed`` and the job is aborted and taken off the queue, so arq can
      never hand it to another worker (it is also ``max_tries=1``).
    * Redis gone: any Redis error answers 503 ``unavailable``; redis-py reconnects on the next
      command, so nothing needs a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from arq.connections import ArqRedis
from arq.constants import abort_jobs_ss
from arq.jobs import Job as ArqJob
from arq.jobs import JobStatus
from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

from gradtrace.errors import DeviceUnavailable, PoolSaturated, ServiceUnavailable
from gradtrace.jobs import Job, JobResult, Runner, RunnerState
from gradtrace.queue import keys
from gradtrace.queue.admission import Admission
from gradtrace.sandbox import kinds
from gradtrace.sandbox.wire import decode_result, encode_job
from gradtrace.settings import Settings

log = logging.getLogger("gradtrace.queue")
REFRESH_S = 0.5
CRASHED = ("The sandbox worker running this snippet stopped before it finished (its process or "
           "machine went away); the run was not retried. Please run it again.")


@dataclass
class Snapshot:
    """What the registry and the queues looked like at the last refresh."""

    redis_ok: bool = False
    error: str | None = None
    workers: list[dict[str, Any]] = field(default_factory=list)
    queued: dict[str, int] = field(default_factory=dict)

    def of(self, device: str) -> list[dict[str, Any]]:
        """The workers of ``device`` that take jobs (not draining)."""
        return [w for w in self.workers if w.get("device") == device and not w.get("draining")]

    def draining(self, device: str) -> list[dict[str, Any]]:
        return [w for w in self.workers if w.get("device") == device and w.get("draining")]

    def slots(self, device: str) -> int:
        return sum(int(w.get("slots", 0)) for w in self.of(device))

    def held(self, device: str) -> int:
        """Jobs of the queue that run rather than wait: the slots, and draining workers' jobs."""
        return self.slots(device) + sum(int(w.get("busy", 0)) for w in self.draining(device))

    def busy(self, device: str) -> int:
        return sum(int(w.get("busy", 0)) for w in self.workers if w.get("device") == device)

    def waiting(self, device: str) -> int:
        return max(0, self.queued.get(device, 0) - self.held(device))


class QueueRunner(Runner):
    """Runs jobs on ``gradtrace worker`` processes through arq (see the module docstring)."""

    def __init__(self, settings: Settings, *, kind_files: Sequence[str] = ()) -> None:
        """``kind_files``: job kinds defined outside the package (tests), as the workers have them."""
        if not settings.redis_url:
            raise ValueError("GRADTRACE_RUNNER=queue needs GRADTRACE_REDIS_URL (redis://host:6379/0)")
        self.settings = settings
        self.kinds = kinds.table(kind_files)
        self.redis = ArqRedis(
            connection_pool=ConnectionPool.from_url(settings.redis_url, socket_connect_timeout=2.0,
                                                    health_check_interval=5),
            job_serializer=keys.serialize, job_deserializer=keys.deserialize)
        self.admission = Admission(self.redis)
        self.snapshot = Snapshot()
        self._refresher: asyncio.Task[None] | None = None

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        await self.refresh()
        self._refresher = asyncio.ensure_future(self._refresh_forever())

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.aclose(close_connection_pool=True)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            await self.refresh()

    async def refresh(self) -> Snapshot:
        try:
            names = [name async for name in self.redis.scan_iter(match=keys.WORKER_PATTERN, count=500)]
            async with self.redis.pipeline(transaction=False) as pipe:
                if names:
                    pipe.mget(names)
                for device in keys.DEVICES:
                    pipe.zcard(keys.queue_name(device))
                got = await pipe.execute()
            entries = got.pop(0) if names else []
            workers = [orjson.loads(raw) for raw in entries if raw]
            self.snapshot = Snapshot(True, None, workers, dict(zip(keys.DEVICES, got, strict=True)))
        except (RedisError, OSError, ValueError) as exc:
            self.snapshot = Snapshot(False, f"{type(exc).__name__}: {exc}")
        return self.snapshot

    # ----------------------------------------------------------------- devices
    def resolve_device(self, requested: str) -> str:
        snap = self.snapshot
        if requested == "auto":
            idle_gpu = any(int(w.get("busy", 0)) < int(w.get("slots", 0)) for w in snap.of("cuda"))
            return "cuda" if idle_gpu else "cpu"
        if requested not in keys.DEVICES:
            raise DeviceUnavailable(f'unknown device {requested!r}; use "cpu", "cuda" or "auto"')
        if requested == "cuda" and snap.redis_ok and not snap.of("cuda"):
            raise DeviceUnavailable('cuda was requested but no GPU worker is registered; use device '
                                    '"cpu" or "auto"')
        return requested

    # ----------------------------------------------------------------- running jobs
    async def run(self, job: Job) -> JobResult:
        self.kinds.check(job)  # ValueError for an unknown kind or wrong params, before enqueueing
        try:
            return await self._run(job)
        except (RedisError, OSError) as exc:
            raise ServiceUnavailable(f"the job queue is unreachable ({type(exc).__name__}); please retry",
                                     retry_after=2.0) from exc

    async def _run(self, job: Job) -> JobResult:
        snap = self.snapshot
        if snap.redis_ok and not snap.of(job.device):
            raise ServiceUnavailable(f"no {job.device} worker is registered right now; please retry",
                                     retry_after=2.0)
        # arq keeps a job in its queue until it ends: what is beyond the running ones is waiting.
        held = snap.held(job.device)
        job_id = uuid.uuid4().hex
        admitted = await self.admission.enqueue(encode_job(job), job_id=job_id,
                                                queue=keys.queue_name(job.device),
                                                bound=held + self.settings.queue_size,
                                                expires_s=self.settings.queue_wait_s)
        arq_job = admitted.job
        if arq_job is None:
            waiting = max(0, admitted.size - held)
            raise PoolSaturated(f"all {job.device} workers are busy and {waiting} runs are waiting; "
                                "please retry shortly", retry_after=_retry_after(waiting, snap.slots(job.device)))
        await self._nudge(job.device)
        try:
            return await self._wait(arq_job, job)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._abort(job_id, job.device)), 2.0)
            raise

    async def _nudge(self, device: str) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.rpush(keys.wake_key(device), b"1")
            pipe.ltrim(keys.wake_key(device), -64, -1)
            await pipe.execute()

    async def _abort(self, job_id: str, device: str, *, dequeue: bool = False) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(abort_jobs_ss, {job_id: int(time.time() * 1000)})
            if dequeue:
                pipe.zrem(keys.queue_name(device), job_id)
            await pipe.execute()
        await self._nudge(device)

    async def _wait(self, arq_job: ArqJob, job: Job) -> JobResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        start_by = started + self.settings.queue_wait_s
        give_up = start_by + job.limits.timeout_s + 60.0
        job_id = arq_job.job_id
        while True:
            if await keys.wait_for_push(self.redis, keys.done_key(job_id), keys.POLL_S):
                break
            status = await arq_job.status()
            if status == JobStatus.complete:
                break
            now = loop.time()
            if status in (JobStatus.queued, JobStatus.deferred) and now > start_by:
                await self._abort(job_id, job.device, dequeue=True)
                raise PoolSaturated(f"no {job.device} worker took this run within "
                                    f"{self.settings.queue_wait_s:g} s; it was dropped, please retry",
                                    retry_after=2.0)
            if status == JobStatus.not_found:
                raise ServiceUnavailable("the job queue lost this run (was Redis restarted?); please retry",
                                         retry_after=2.0)
            if status == JobStatus.in_progress and await self._worker_gone(job_id, job.device):
                await self._abort(job_id, job.device, dequeue=True)
                return self.kinds.kind(job.kind).failed(job, "crashed", CRASHED, "")
            if now > give_up:
                await self._abort(job_id, job.device, dequeue=True)
                return self.kinds.kind(job.kind).failed(job, "crashed", CRASHED, "")
        return await self._result(arq_job, job)

    async def _worker_gone(self, job_id: str, device: str) -> bool:
        worker_id = await self.redis.get(keys.running_key(job_id))
        if worker_id is None:
            return False  # between arq's start and the job's first line; look again next round
        return not await self.redis.exists(keys.worker_key(device, worker_id.decode()))

    async def _result(self, arq_job: ArqJob, job: Job) -> JobResult:
        info = await arq_job.result_info()
        if info is None:
            raise ServiceUnavailable("the run's result was lost (was Redis restarted?); please retry",
                                     retry_after=2.0)
        if not info.success:
            message = str(info.result)
            if "expired" in message:
                raise PoolSaturated("this run waited past its deadline and was dropped; please retry",
                                    retry_after=2.0)
            if message.startswith(("ServiceUnavailable", "PoolSaturated")):
                raise ServiceUnavailable("the worker's sandbox was not ready for this run; please retry",
                                         retry_after=2.0)
            log.warning("job %s failed on its worker: %s", arq_job.job_id, message[:200])
            return self.kinds.kind(job.kind).failed(job, "crashed", CRASHED, "")
        try:  # NOTE [read three fields] (sandbox/wire.py): the header, not the whole document
            if not isinstance(info.result, bytes):
                raise TypeError("a worker answers a result frame")
            return decode_result(info.result)
        except (ValueError, TypeError):
            log.warning("job %s answered something that is not a result message", arq_job.job_id)
            return self.kinds.kind(job.kind).failed(job, "crashed", CRASHED, "")

    # ----------------------------------------------------------------- health
    def state(self) -> RunnerState:
        snap = self.snapshot
        layers = merged_layers(snap.workers)
        devices = {d: {"workers": len(snap.of(d)), "draining": len(snap.draining(d)), "slots": snap.slots(d),
                       "busy": snap.busy(d), "queued": snap.waiting(d)} for d in keys.DEVICES}
        first = snap.workers[0] if snap.workers else {}
        detail: dict[str, Any] = {
            "layers": layers, "torch_version": first.get("torch_version"),
            "capture_core": first.get("capture_core"), "redis": {"ok": snap.redis_ok, "error": snap.error},
            "devices": devices,
            "workers": [{k: w.get(k) for k in ("id", "device", "slots", "busy", "started", "finished", "ready",
                                               "host", "pid", "draining")}
                        for w in snap.workers]}
        return RunnerState(
            kind="queue", ready=snap.redis_ok and bool(snap.of("cpu")), workers=snap.slots("cpu") + snap.slots("cuda"),
            busy=snap.busy("cpu") + snap.busy("cuda"), queued=snap.waiting("cpu") + snap.waiting("cuda"),
            queue_capacity=self.settings.queue_size, cuda_available=bool(snap.of("cuda")), detail=detail)


def merged_layers(workers: list[dict[str, Any]]) -> dict[str, str]:
    """Each isolation layer as the fleet has it: ``off`` as soon as one worker has it off."""
    merged: dict[str, str] = {}
    for worker in workers:
        for name, value in (worker.get("layers") or {}).items():
            if name not in merged or (merged[name].startswith("active") and not str(value).startswith("active")):
                merged[name] = str(value)
    return merged


def _retry_after(waiting: int, slots: int) -> float:
    return float(min(30, max(1, waiting // max(1, slots))))
