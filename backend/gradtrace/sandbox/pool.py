"""The fork-server pool: the web process's side of the sandbox (never imports torch).

``ForkServerPool`` starts the zygote (:mod:`gradtrace.sandbox.zygote_client`), takes one of its
pre-forked, already locked-down children per job, hands it the job over a pipe and supervises
it: wall clock, output cap, result cap, cancellation, a bounded queue. It carries every job
kind the same way (NOTE [adding a job kind] in :mod:`gradtrace.jobs`): the job goes to the child
in its wire form, what the job answers (a frame: NOTE [answer frames] in
:mod:`gradtrace.sandbox.wire`) is validated by its kind's ``validate`` before anyone sees it, and
when it leaves nothing valid the answer is its kind's ``failed``, with the status
:mod:`gradtrace.sandbox.outcome` gives.

NOTE [cuda workers]
    CUDA cannot survive a fork, so a CUDA context must never exist in a process that forks. On
    a host with GPUs the pool starts one more zygote per GPU (``CUDA_VISIBLE_DEVICES=i``); like
    the CPU zygote it never initialises CUDA itself (the availability probe is NVML-based). Each
    of its children initialises CUDA in its own fresh address space while it is pre-forked and
    idle, before it locks down, runs exactly one job, and exits. One job per GPU at a time.
    There is no GPU on the development machine: this path is kept small and obvious.

NOTE [replace after the job]
    Each job takes one pre-forked child, and the zygote forks its replacement, which then
    pre-faults capture (NOTE [pre-fault while idle] in ``child.py``): ~10 ms of CPU. Asked for
    when the job starts, that work competes with the job (and with the web process) for the
    cores; on 2 busy cores it made a trivial run ~15 % slower. So while another idle child
    remains and nobody waits, the replacement is asked for when the job ends instead; under
    load (jobs waiting, or the last spare taken) it is asked for at once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gradtrace.errors import DeviceUnavailable, PoolSaturated, ServiceUnavailable
from gradtrace.jobs import Job, JobResult, Runner, RunnerState
from gradtrace.sandbox import kinds
from gradtrace.sandbox.config import ZygoteConfig
from gradtrace.sandbox.outcome import Ending, classify_failure, cut_output
from gradtrace.sandbox.stopgrace import StopGrace
from gradtrace.sandbox.streams import CappedReader, write_all
from gradtrace.sandbox.wire import Answer, decode_answer, encode_job
from gradtrace.sandbox.zygote_client import Child, ZygoteClient
from gradtrace.settings import Settings

KILL_GRACE_S = 5.0
ON_LOOP_VALIDATION = 1 << 18
"""An answer that costs more to validate than a 256 KiB document is validated off the event
loop (NOTE [validated on the loop or not])."""
ATTACHMENT_WEIGHT = 16
"""An attachment's bytes per document byte of validation cost."""


def validation_cost(answer: Answer) -> int:
    """NOTE [validated on the loop or not]
        The thread hop costs a GIL hand-over each way, which a busy loop makes wait (its
        switch interval, 5 ms). So a small answer is validated on the loop, and the measure
        of small is what validation costs: parsing and validating the document's JSON is
        about 45 ns a byte, while its attachment (a tensor file) is only hashed (about 2 ns
        a byte) and its header checked. Counting the file at full weight sent a training
        step's answer (180 KB of document, 150 KB of tensors) to a thread that the same
        answer without tensors did not take; a 4 MiB file now weighs as much as a 256 KiB
        document, both a few milliseconds of the loop."""
    return len(answer.document) + len(answer.attachment or b"") // ATTACHMENT_WEIGHT


class ForkServerPool(Runner):
    """Runs jobs in pre-forked, jailed children of warm zygotes (see module docstring)."""

    def __init__(self, settings: Settings, *, warm_compile: bool = True, kind_files: Sequence[str] = ()) -> None:
        """``warm_compile=False`` starts ~6 s faster; compiling snippets then risk the time limit.
        ``kind_files``: job kinds defined outside the package (tests), loaded here and by the zygote."""
        self.kinds = kinds.table(kind_files)
        self.settings = settings
        self.config = replace(ZygoteConfig.from_settings(settings, warm_compile=warm_compile),
                              kind_files=[str(p) for p in kind_files])
        self.workers = settings.workers
        self.queue_capacity = settings.queue_size
        self._slots: asyncio.Semaphore | None = None
        self._busy = 0
        self._waiting = 0
        self._closing = False
        self._cpu = ZygoteClient(self.config, spares=2 * self.workers)  # NOTE [pre-fault while idle]
        self._gpus: list[ZygoteClient] = []
        self._gpu_slots: list[asyncio.Semaphore] = []

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        self._slots = asyncio.Semaphore(self.workers)
        self._closing = False
        await self._cpu.start()
        for index in range(int(self._cpu.info.get("cuda_devices") or 0)):
            gpu = ZygoteClient(replace(self.config, cuda=True), spares=1,
                               env={"CUDA_VISIBLE_DEVICES": str(index)})
            await gpu.start()
            self._gpus.append(gpu)
            self._gpu_slots.append(asyncio.Semaphore(1))

    async def close(self) -> None:
        self._closing = True
        for client in [self._cpu, *self._gpus]:
            await client.close()

    # ----------------------------------------------------------------- running jobs
    def resolve_device(self, requested: str) -> str:
        """``cpu``/``cuda`` for ``auto``/``cpu``/``cuda``; refuses cuda on a host without it."""
        cuda = bool(self._cpu.info.get("cuda_available"))
        if requested == "auto":
            return "cuda" if cuda else "cpu"
        if requested == "cuda" and not cuda:
            raise DeviceUnavailable(
                'cuda was requested but this server has no CUDA device; use device "cpu" or "auto"')
        if requested not in ("cpu", "cuda"):
            raise DeviceUnavailable(f'unknown device {requested!r}; use "cpu", "cuda" or "auto"')
        return requested

    async def run(self, job: Job) -> JobResult:
        self.kinds.check(job)  # ValueError for an unknown kind or wrong params, before taking a slot
        client, slots = self._route(job)
        if self._closing:
            raise ServiceUnavailable("the sandbox is not running")
        if slots.locked() and self._waiting >= self.queue_capacity:
            raise PoolSaturated(f"all {self.workers} workers are busy and {self._waiting} runs are "
                                "waiting; please retry shortly")
        self._waiting += 1
        try:
            await slots.acquire()
        finally:
            self._waiting -= 1
        self._busy += 1
        # NOTE [replace after the job]: with spares to spare, the replacement is forked once
        # this job is over, not while it runs.
        deferred = client.idle > 1 and self._waiting == 0
        try:
            child = await client.take_child(queued=self._waiting, replace=not deferred)
            return await self._execute(client, child, job)
        finally:
            if deferred:
                client.replace(queued=self._waiting)
            self._busy -= 1
            slots.release()

    def _route(self, job: Job) -> tuple[ZygoteClient, asyncio.Semaphore]:
        """The zygote and the slots for this job's device (NOTE [cuda workers])."""
        if job.device == "cpu":
            if self._slots is None:
                raise ServiceUnavailable("the sandbox is not running")
            return self._cpu, self._slots
        self.resolve_device(job.device)
        if not self._gpus:
            raise DeviceUnavailable("cuda was requested but no GPU worker is running on this server")
        index = min(range(len(self._gpus)), key=lambda i: (self._gpu_slots[i].locked(), i))
        return self._gpus[index], self._gpu_slots[index]

    async def _execute(self, client: ZygoteClient, child: Child, job: Job) -> JobResult:
        out = CappedReader(child.out_r, job.limits.output_bytes)
        res = CappedReader(child.res_r, job.limits.answer_bytes)  # NOTE [answer cap] in jobs.py
        ending = Ending()
        try:
            await self._send_job(child, job)
            early = await self._supervise(client, child, job, out, res, ending)
            if early is not None:
                return early
            if not child.exit.done():
                ending.output_flood = out.overflowed
                ending.result_too_large = res.overflowed and not ending.output_flood
                ending.wall_timeout = not (ending.output_flood or ending.result_too_large)
                client.kill(child)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(child.exit), KILL_GRACE_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(out.done, res.done), KILL_GRACE_S)
        except asyncio.CancelledError:
            client.kill(child)
            raise
        finally:
            out.close()
            res.close()
        return await self._outcome(child, job, ending, out.data(), res)

    async def _supervise(self, client: ZygoteClient, child: Child, job: Job, out: CappedReader,
                         res: CappedReader, ending: Ending) -> JobResult | None:
        """Wait for the end, a flood or the deadline; return the result early when it is in.

        NOTE [early result]
            The child closes the result pipe before ``_exit``, and tearing a forked process down
            (its copy-on-write memory, its mount namespace) takes about 10 ms more. A complete,
            valid result is answered at once and the job is killed, so nothing of it runs on; the
            kernel finishes tearing it down in the background while the slot serves the next job.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + job.limits.timeout_s
        stopped = False
        grace: StopGrace | None = None
        waiters: set[asyncio.Future[Any]] = {child.exit, out.overflow, res.overflow, res.done}
        while True:
            done, _ = await asyncio.wait(waiters, timeout=max(0.0, deadline - loop.time()),
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done and not stopped:
                # NOTE [stop, then kill] (child.py): ask for the partial document first, and
                # wait while it is being finished (NOTE [grace under load], stopgrace.py).
                client.stop(child)
                stopped = True
                grace = StopGrace(child.pid, res)
                deadline = loop.time() + grace.poll_s
                continue
            if not done and grace is not None:
                if grace.working():
                    client.stop(child)  # again: a snippet that caught the first one ends now
                    deadline = loop.time() + grace.poll_s
                    continue
                ending.stop_unanswered = grace.why
                return None
            if child.exit.done() or out.overflowed or res.overflowed:
                return None
            waiters.discard(res.done)
            if res.size:
                result = await self._validate(job, res.data())
                if result is not None:
                    client.kill(child)
                    return result

    async def _send_job(self, child: Child, job: Job) -> None:
        try:
            await write_all(child.job_w, encode_job(job))
        except OSError:
            pass  # the child is gone; its exit report says how
        finally:
            with contextlib.suppress(OSError):
                os.close(child.job_w)

    async def _outcome(self, child: Child, job: Job, ending: Ending, raw_out: bytes,
                       res: CappedReader) -> JobResult:
        report = child.exit.result() if child.exit.done() else {"lost": True}
        ending.lost = bool(report.get("lost"))
        ending.code = report.get("code")
        ending.signal = report.get("signal")
        ending.cpu_s = float(report.get("cpu_s") or 0.0)
        ending.oom = bool(report.get("oom"))
        ending.result_bytes = res.size
        limited = ending.wall_timeout or ending.output_flood or ending.result_too_large
        if not limited and ending.code == 0 and not res.overflowed:
            result = await self._validate(job, res.data())
            if result is not None:
                return result
        status, message = classify_failure(job, ending)
        return self.kinds.kind(job.kind).failed(job, status, message, cut_output(raw_out, job.limits.output_bytes))

    async def _validate(self, job: Job, raw: bytes) -> JobResult | None:
        """Unframe and validate by the job's kind, off the event loop when the answer is big
        enough to matter; None for an answer that is not a frame or not valid."""
        try:
            answer = decode_answer(raw)
        except ValueError:
            return None
        validate = self.kinds.kind(job.kind).validate
        if validation_cost(answer) > ON_LOOP_VALIDATION:
            return await asyncio.to_thread(validate, job, answer)
        return validate(job, answer)

    # ----------------------------------------------------------------- health
    def state(self) -> RunnerState:
        info = self._cpu.info
        detail: dict[str, Any] = {
            "zygote_pid": info.get("pid"), "layers": info.get("layers", {}),
            "torch_version": info.get("torch_version"), "capture_core": info.get("capture_core"),
            "idle_children": self._cpu.idle,
            "zygote_hugepages_mib": info.get("hugepages_mib"), "sandbox": self.config.sandbox,
            "gpu_workers": [{"zygote_pid": g.info.get("pid"), "ready": g.live, "idle_children": g.idle}
                            for g in self._gpus]}
        return RunnerState(
            kind="forkserver", ready=self._cpu.live, workers=self.workers, busy=self._busy,
            queued=self._waiting, queue_capacity=self.queue_capacity,
            cuda_available=bool(info.get("cuda_available")), detail=detail)
