"""``gradtrace worker``: a warm fork-server pool that takes jobs for one device from the queue.

The pool is the same :class:`~gradtrace.sandbox.pool.ForkServerPool` that ``gradtrace serve``
embeds, with every sandbox layer; arq only decides which job it runs next (NOTE [why arq] in
:mod:`gradtrace.queue.keys`).

NOTE [surviving a Redis restart]
    arq's worker loop ends with the first Redis error. The pool is not arq's: it lives outside
    the loop, so when Redis goes away the loop is rebuilt on a fresh connection every half
    second until Redis answers again, while the zygote and its pre-forked children stay warm.
    Jobs that were running are cancelled (their children killed): their results could not be
    written anyway, and the waiting API request has already answered 503.

NOTE [drain on SIGTERM]
    A deploy or an autoscaler stops a worker with SIGTERM; no run a user pressed Run for may be
    lost to it. The first SIGTERM (or SIGINT) hands the drain to arq's own
    ``handle_sig_wait_for_completion``: it stops taking jobs at once (``allow_pick_jobs``),
    waits for the running ones, then cancels what is left and ends its loop. The registry entry
    is republished at once as ``draining``: API replicas stop counting its slots, while the
    entry itself stays alive so that its running jobs are not taken for crashed. Jobs still in
    the queue are never touched; other workers (or a fresh one) run them. Each job finishes and
    delivers its document as usual. At ``GRADTRACE_WORKER_DRAIN_S`` the jobs still running are
    stopped (their jailed children killed) and answer ``crashed`` with a sentence that says why;
    a second signal does that at once. arq's own deadline, a few seconds later, only backs this
    up. Then the entry is deleted, the pool closed, and the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import signal
import socket
import time
from collections.abc import Sequence
from typing import Any

import orjson
from arq.connections import ArqRedis
from arq.worker import Worker, func
from redis.asyncio import ConnectionPool
from redis.exceptions import RedisError

from gradtrace.jobs import Job, JobResult
from gradtrace.queue import keys
from gradtrace.sandbox.pool import ForkServerPool
from gradtrace.sandbox.wire import encode_result
from gradtrace.settings import Settings

log = logging.getLogger("gradtrace.worker")
RESULT_KEEP_S = 120
JOB_GRACE_S = 15.0
"""arq's own limit on a job is the sandbox's wall clock plus this (the pool stops it first)."""
CUTOFF_MARGIN_S = 5
"""arq's drain deadline is ours plus this: time for the stopped jobs to write their documents."""
DRAINED = ("The sandbox worker running this snippet was shut down (a deploy or a scale-down) and its "
           "{grace:g} s to finish running jobs ran out first; the run was stopped and not retried. "
           "Please run it again.")


class _NudgedWorker(Worker):
    """arq's worker, woken by a push on ``gradtrace:wake:<device>`` instead of a fixed sleep.

    arq polls its queue every ``poll_delay``; a job would wait half of it on average. Here an
    idle worker blocks on the wake-up list (the API pushes to it after each enqueue), and a full
    one waits for one of its slots to free (or a short while, to see aborts), then polls at once.
    """

    wake: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slot_freed = asyncio.Event()

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        self.slot_freed.set()

    async def heart_beat(self) -> None:
        await super().heart_beat()
        if not self.allow_pick_jobs:  # draining: leave the nudges to the workers that take jobs
            self.slot_freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.slot_freed.wait(), keys.POLL_S)
        elif self.job_counter < self.max_jobs:
            await keys.wait_for_push(self.pool, self.wake, keys.POLL_S)
        else:  # full: leave the nudges to idle workers
            self.slot_freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.slot_freed.wait(), keys.POLL_S / 4)


class WorkerService:
    """One worker process: its pool, its registry entry and its arq loop."""

    def __init__(self, settings: Settings, *, device: str, concurrency: int, warm_compile: bool = True,
                 kind_files: Sequence[str] = ()) -> None:
        """``kind_files``: job kinds defined outside the package (tests), as for the pool."""
        if device not in keys.DEVICES:
            raise ValueError(f"device must be one of {keys.DEVICES}, not {device!r}")
        if not settings.redis_url:
            raise ValueError("GRADTRACE_REDIS_URL is required for `gradtrace worker`")
        self.settings = settings
        self.device = device
        self.concurrency = concurrency
        self.id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.pool = ForkServerPool(settings.model_copy(update={"workers": concurrency, "queue_size": 0}),
                                   warm_compile=warm_compile, kind_files=kind_files)
        self.busy = 0
        self.started = 0
        self.finished = 0
        self.draining = False
        self.drain_wait_s = math.ceil(settings.worker_drain_s) + CUTOFF_MARGIN_S
        """arq's ``job_completion_wait``: our cut-off plus the time to write the documents."""
        self._stop = asyncio.Event()
        self._cutoff = asyncio.Event()
        self._arq: _NudgedWorker | None = None

    # ----------------------------------------------------------------- registry
    def entry(self) -> dict[str, Any]:
        st = self.pool.state()
        return {"id": self.id, "device": self.device, "slots": self.concurrency, "busy": self.busy,
                "started": self.started, "finished": self.finished, "ready": st.ready,
                "layers": st.detail.get("layers", {}), "torch_version": st.detail.get("torch_version"),
                "capture_core": st.detail.get("capture_core"), "cuda_available": st.cuda_available,
                "draining": self.draining, "pid": os.getpid(), "host": socket.gethostname(),
                "seen": time.time()}

    async def publish(self, redis: ArqRedis) -> None:
        await redis.set(keys.worker_key(self.device, self.id), orjson.dumps(self.entry()),
                        px=int(keys.WORKER_TTL_S * 1000))

    async def _heartbeat(self, redis: ArqRedis) -> None:
        while True:
            with contextlib.suppress(RedisError, OSError):
                await self.publish(redis)
            await asyncio.sleep(keys.HEARTBEAT_S)

    # ----------------------------------------------------------------- the job
    async def run_job(self, ctx: dict[str, Any], payload: bytes) -> bytes:
        """One job of any kind (its wire form); answers :func:`gradtrace.sandbox.wire.encode_result`."""
        redis: ArqRedis = ctx["redis"]
        job_id = str(ctx["job_id"])
        job = self.pool.kinds.decode(payload)
        await redis.set(keys.running_key(job_id), self.id, px=int((job.limits.timeout_s + 60) * 1000))
        self.busy += 1
        self.started += 1
        with contextlib.suppress(RedisError, OSError):
            await self.publish(redis)
        try:
            result = await self._run_until_cutoff(job)
        finally:
            self.busy -= 1
            self.finished += 1
        return encode_result(result)

    async def _run_until_cutoff(self, job: Job) -> JobResult:
        """The pool's result, or ``crashed`` if the drain ends first (NOTE [drain on SIGTERM])."""
        run = asyncio.ensure_future(self.pool.run(job))
        cutoff = asyncio.ensure_future(self._cutoff.wait())
        try:
            await asyncio.wait({run, cutoff}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cutoff.cancel()
            if not run.done():
                run.cancel()  # the pool kills the jailed child
            await asyncio.gather(run, cutoff, return_exceptions=True)
        if not (run.cancelled() and self._cutoff.is_set()):
            return run.result()
        log.warning("worker %s: drain over, a running job was stopped", self.id)
        drained = DRAINED.format(grace=self.settings.worker_drain_s)
        return self.pool.kinds.kind(job.kind).failed(job, "crashed", drained, "")

    async def _after_job(self, ctx: dict[str, Any]) -> None:
        redis: ArqRedis = ctx["redis"]
        job_id = str(ctx["job_id"])
        async with redis.pipeline(transaction=False) as pipe:
            pipe.rpush(keys.done_key(job_id), b"1")
            pipe.expire(keys.done_key(job_id), RESULT_KEEP_S)
            pipe.delete(keys.running_key(job_id))
            await pipe.execute()
        with contextlib.suppress(RedisError, OSError):
            await self.publish(redis)

    # ----------------------------------------------------------------- lifecycle
    def _arq_worker(self, redis: ArqRedis) -> _NudgedWorker:
        worker = _NudgedWorker(
            functions=[func(self.run_job, name=keys.FUNCTION, max_tries=1,
                            timeout=self.settings.timeout_s + JOB_GRACE_S)],
            queue_name=keys.queue_name(self.device), redis_pool=redis, max_jobs=self.concurrency,
            allow_abort_jobs=True, retry_jobs=False, handle_signals=False, poll_delay=0,
            keep_result=RESULT_KEEP_S, health_check_interval=60, ctx={}, after_job_end=self._after_job,
            job_completion_wait=self.drain_wait_s,
            job_serializer=keys.serialize, job_deserializer=keys.deserialize, log_results=False)
        worker.wake = keys.wake_key(self.device)
        return worker

    def _redis(self) -> ArqRedis:
        assert self.settings.redis_url
        pool = ConnectionPool.from_url(self.settings.redis_url, socket_connect_timeout=2.0,
                                       health_check_interval=5)
        redis = ArqRedis(connection_pool=pool, job_serializer=keys.serialize,
                         job_deserializer=keys.deserialize, default_queue_name=keys.queue_name(self.device))
        return redis

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """The first signal starts the drain, the next one ends it (NOTE [drain on SIGTERM])."""
        if self._stop.is_set():
            log.warning("worker %s: %s again, stopping the running jobs now", self.id, sig.name)
            self._cutoff.set()
            return
        self._stop.set()
        self.draining = True
        grace = self.settings.worker_drain_s
        log.warning("worker %s: %s, draining (up to %g s for %d running jobs)", self.id, sig.name, grace, self.busy)
        asyncio.get_running_loop().call_later(grace, self._cutoff.set)
        if self._arq is not None:
            self._arq.handle_sig_wait_for_completion(sig)

    async def serve(self) -> None:
        """Start the pool, then take jobs until SIGTERM/SIGINT (NOTE [surviving a Redis restart])."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop, sig)
        await self.pool.start()
        try:
            if self.device == "cuda" and not self.pool.state().cuda_available:
                raise SystemExit("gradtrace worker: --device cuda, but this machine has no CUDA device")
            log.info("worker %s ready for %s jobs (%d slots)", self.id, self.device, self.concurrency)
            while not self._stop.is_set():
                await self._one_connection()
                if not self._stop.is_set():
                    await asyncio.sleep(0.5)
        finally:
            await self.pool.close()

    async def _one_connection(self) -> None:
        redis = self._redis()
        worker = self._arq = self._arq_worker(redis)
        heartbeat = asyncio.ensure_future(self._heartbeat(redis))
        main = worker.main_task = asyncio.ensure_future(worker.main())
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({main, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stop.done() and not main.done():
                # Draining: arq ends ``main`` once its jobs are over (or at its own deadline).
                with contextlib.suppress(RedisError, OSError):
                    await self.publish(redis)
                await asyncio.wait({main}, timeout=self.drain_wait_s + CUTOFF_MARGIN_S)
            if main.done() and not main.cancelled() and main.exception() is not None:
                log.warning("worker %s lost Redis (%r); reconnecting", self.id, main.exception())
        finally:
            self._arq = None
            for task in (heartbeat, main, stop):
                task.cancel()
            for task in list(worker.tasks.values()):
                task.cancel()
            await asyncio.gather(heartbeat, main, stop, *worker.tasks.values(), return_exceptions=True)
            with contextlib.suppress(RedisError, OSError):
                await redis.delete(keys.worker_key(self.device, self.id))
            with contextlib.suppress(RedisError, OSError):
                await redis.aclose(close_connection_pool=True)


def run_worker(settings: Settings, *, device: str, concurrency: int, warm_compile: bool = True,
               kind_files: Sequence[str] = ()) -> int:
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("arq").setLevel(logging.WARNING)  # its start lines would log the snippet
    service = WorkerService(settings, device=device, concurrency=concurrency, warm_compile=warm_compile,
                            kind_files=kind_files)
    asyncio.run(service.serve())
    return 0
