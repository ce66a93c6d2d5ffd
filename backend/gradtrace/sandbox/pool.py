"""The fork-server pool: the web process's side of the sandbox (never imports torch).

``ForkServerPool`` starts the zygote from a scrubbed environment, keeps pre-forked, already
locked-down children ready, hands each job to one of them over pipes, and supervises it: wall
clock, output cap, result cap, cancellation, a bounded queue. Everything the job returns is
validated by :mod:`gradtrace.sandbox.outcome` before anyone sees it.

NOTE [who kills and who reaps]
    The zygote is the jobs' parent, so only it can reap them. The web process asks it to kill
    (``{"op": "kill"}``); the zygote signals through a pidfd and the process group, which is
    race-free because it alone decides when a pid is reaped and can be reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gradtrace.errors import DeviceUnavailable, PoolSaturated, ServiceUnavailable
from gradtrace.sandbox import protocol
from gradtrace.sandbox.config import ZygoteConfig
from gradtrace.sandbox.outcome import (
    Ending,
    classify_failure,
    cut_output,
    supervisor_document,
    validate_result,
)
from gradtrace.sandbox.runner import Job, Runner, RunnerState
from gradtrace.sandbox.streams import CappedReader, write_all
from gradtrace.settings import Settings

START_TIMEOUT_S = 180.0
CHILD_WAIT_S = 30.0
KILL_GRACE_S = 5.0
ZYGOTE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
"""NOTE [scrubbed zygote env]
    The zygote gets this environment and nothing else: a job that scans its own memory (ctypes)
    can find whatever the zygote ever held, so the service's secrets must never be there."""


@dataclass
class _Child:
    """A pre-forked job child as the web process sees it: its id and pipe ends."""

    cid: int
    pid: int
    uid: int
    job_w: int
    out_r: int
    res_r: int
    exit: asyncio.Future[dict[str, Any]] = field(repr=False)
    taken: bool = False

    def close_fds(self) -> None:
        for fd in (self.job_w, self.out_r, self.res_r):
            with contextlib.suppress(OSError):
                os.close(fd)


class ForkServerPool(Runner):
    """Runs jobs in pre-forked, jailed children of a warm zygote (see module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.config = ZygoteConfig.from_settings(settings)
        self.workers = settings.workers
        self.queue_capacity = settings.queue_size
        self._slots: asyncio.Semaphore | None = None
        self._busy = 0
        self._waiting = 0
        self._idle: deque[_Child] = deque()
        self._child_waiters: deque[asyncio.Future[_Child]] = deque()
        self._children: dict[int, _Child] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._ctrl: socket.socket | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._info: dict[str, Any] = {}
        self._live = False
        """A zygote said ready and has not gone away since."""
        self._closing = False
        self._restart: asyncio.Task[None] | None = None
        self._failed_spawns = 0

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        self._slots = asyncio.Semaphore(self.workers)
        self._closing = False
        await self._spawn_zygote()

    async def _spawn_zygote(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-m", "gradtrace.sandbox.zygote", str(theirs.fileno()),
                pass_fds=[theirs.fileno()], env=dict(ZYGOTE_ENV), cwd="/", stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        ours.setblocking(False)
        self._ctrl = ours
        self._ready = loop.create_future()
        protocol.send(ours, self.config.to_message())
        loop.add_reader(ours.fileno(), self._on_control, ours)
        try:
            self._info = await asyncio.wait_for(self._ready, START_TIMEOUT_S)
            self._live = True
        except (TimeoutError, ServiceUnavailable):
            await self._stop_zygote()
            raise
        self._send({"op": "fork", "n": self.workers})
        deadline = loop.time() + CHILD_WAIT_S
        while len(self._idle) < self.workers and self._ctrl is ours and loop.time() < deadline:
            await asyncio.sleep(0.005)

    async def close(self) -> None:
        self._closing = True
        if self._restart is not None:
            self._restart.cancel()
            with contextlib.suppress(BaseException):
                await self._restart
        await self._stop_zygote()

    async def _stop_zygote(self) -> None:
        proc, ctrl = self._proc, self._ctrl
        if ctrl is not None:
            with contextlib.suppress(OSError):
                protocol.send(ctrl, {"op": "exit"})
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()  # its children die with it (PR_SET_PDEATHSIG)
                await proc.wait()
        if ctrl is not None:
            self._detach(ctrl)
        self._proc = None

    def _detach(self, ctrl: socket.socket) -> None:
        """Forget a zygote: every child it had ends as lost."""
        self._live = False
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(ctrl.fileno())
        ctrl.close()
        if self._ctrl is ctrl:
            self._ctrl = None
        for child in list(self._children.values()):
            if not child.exit.done():
                child.exit.set_result({"lost": True})
            if not child.taken:
                child.close_fds()
        self._children.clear()
        self._idle.clear()
        while self._child_waiters:
            waiter = self._child_waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ServiceUnavailable("the sandbox is restarting; please retry"))

    # ----------------------------------------------------------------- control channel
    def _send(self, message: dict[str, Any]) -> None:
        if self._ctrl is not None:
            with contextlib.suppress(OSError):
                protocol.send(self._ctrl, message)

    def _on_control(self, ctrl: socket.socket) -> None:
        while True:
            try:
                message, fds = protocol.recv(ctrl)
            except (BlockingIOError, InterruptedError):
                return
            except (OSError, ValueError):
                message, fds = None, []
            if message is None:
                self._on_zygote_lost(ctrl)
                return
            self._dispatch(message, fds)

    def _dispatch(self, message: dict[str, Any], fds: list[int]) -> None:
        kind = message.get("type")
        if kind == "child" and len(fds) == 3:
            loop = asyncio.get_running_loop()
            child = _Child(int(message["id"]), int(message["pid"]), int(message["uid"]), job_w=fds[0],
                           out_r=fds[1], res_r=fds[2], exit=loop.create_future())
            self._children[child.cid] = child
            self._offer(child)
            return
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if kind == "ready" and self._ready is not None and not self._ready.done():
            self._ready.set_result(message)
        elif kind == "fatal" and self._ready is not None and not self._ready.done():
            self._ready.set_exception(ServiceUnavailable(str(message.get("message"))))
        elif kind == "exit":
            self._on_exit(message)

    def _offer(self, child: _Child) -> None:
        while self._child_waiters:
            waiter = self._child_waiters.popleft()
            if not waiter.done():
                waiter.set_result(child)
                return
        self._idle.append(child)

    def _on_exit(self, message: dict[str, Any]) -> None:
        child = self._children.pop(int(message["id"]), None)
        if child is None:
            return
        if not child.exit.done():
            child.exit.set_result(message)
        if not child.taken:  # died while idle (should not happen): replace it, but not forever
            with contextlib.suppress(ValueError):
                self._idle.remove(child)
            child.close_fds()
            self._failed_spawns += 1
            if self._failed_spawns <= 3 * self.workers:
                self._send({"op": "fork", "n": 1})

    def _on_zygote_lost(self, ctrl: socket.socket) -> None:
        self._detach(ctrl)
        if not self._closing and self._restart is None:
            self._restart = asyncio.get_running_loop().create_task(self._restart_zygote())

    async def _restart_zygote(self) -> None:
        try:
            if self._proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                await self._proc.wait()
            await asyncio.sleep(0.5)
            await self._spawn_zygote()
        finally:
            self._restart = None

    # ----------------------------------------------------------------- running jobs
    def resolve_device(self, requested: str) -> str:
        """``cpu``/``cuda`` for ``auto``/``cpu``/``cuda``; refuses cuda on a host without it."""
        cuda = bool(self._info.get("cuda_available"))
        if requested == "auto":
            return "cuda" if cuda else "cpu"
        if requested == "cuda" and not cuda:
            raise DeviceUnavailable(
                'cuda was requested but this server has no CUDA device; use device "cpu" or "auto"')
        if requested not in ("cpu", "cuda"):
            raise DeviceUnavailable(f'unknown device {requested!r}; use "cpu", "cuda" or "auto"')
        return requested

    async def run(self, job: Job) -> dict[str, Any]:
        if job.device != "cpu":
            self.resolve_device(job.device)
            raise DeviceUnavailable("cuda jobs need a GPU worker, which this pool has not started")
        if self._slots is None or self._closing:
            raise ServiceUnavailable("the sandbox is not running")
        if self._busy >= self.workers and self._waiting >= self.queue_capacity:
            raise PoolSaturated(f"all {self.workers} workers are busy and {self._waiting} runs are "
                                "waiting; please retry shortly")
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._busy += 1
        try:
            child = await self._take_child()
            self._send({"op": "fork", "n": 1})
            return await self._execute(child, job)
        finally:
            self._release()

    async def _take_child(self) -> _Child:
        child = self._idle.popleft() if self._idle else None
        if child is None:
            if self._ctrl is None and self._restart is None:
                raise ServiceUnavailable("the sandbox is not running")
            waiter: asyncio.Future[_Child] = asyncio.get_running_loop().create_future()
            self._child_waiters.append(waiter)
            try:
                child = await asyncio.wait_for(waiter, CHILD_WAIT_S)
            except TimeoutError:
                raise ServiceUnavailable("no sandbox worker became ready in time; please retry") from None
        child.taken = True
        self._failed_spawns = 0
        return child

    async def _execute(self, child: _Child, job: Job) -> dict[str, Any]:
        out = CappedReader(child.out_r, job.limits.output_bytes)
        res = CappedReader(child.res_r, job.limits.result_bytes)
        ending = Ending()
        try:
            await self._send_job(child, job)
            early = await self._supervise(child, job, out, res)
            if early is not None:
                return early
            if not child.exit.done():
                ending.output_flood = out.overflowed
                ending.result_too_large = res.overflowed and not ending.output_flood
                ending.wall_timeout = not (ending.output_flood or ending.result_too_large)
                self._send({"op": "kill", "id": child.cid})
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(child.exit), KILL_GRACE_S)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(out.done, res.done), KILL_GRACE_S)
        except asyncio.CancelledError:
            self._send({"op": "kill", "id": child.cid})
            raise
        finally:
            out.close()
            res.close()
        return await self._outcome(child, job, ending, out.data(), res)

    async def _supervise(self, child: _Child, job: Job, out: CappedReader,
                         res: CappedReader) -> dict[str, Any] | None:
        """Wait for the end, a flood or the deadline; return the document early when the result is in.

        NOTE [early result]
            The child closes the result pipe before ``_exit``, and tearing a forked process down
            (its copy-on-write memory, its mount namespace) takes about 10 ms more. A complete,
            valid result is answered at once and the job is killed, so nothing of it runs on; the
            kernel finishes tearing it down in the background while the slot serves the next job.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + job.limits.timeout_s
        waiters: set[asyncio.Future[Any]] = {child.exit, out.overflow, res.overflow, res.done}
        while True:
            done, _ = await asyncio.wait(waiters, timeout=max(0.0, deadline - loop.time()),
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done or child.exit.done() or out.overflowed or res.overflowed:
                return None
            waiters.discard(res.done)
            if res.size:
                doc = await _validate(job, res.data())
                if doc is not None:
                    self._send({"op": "kill", "id": child.cid})
                    return doc

    async def _send_job(self, child: _Child, job: Job) -> None:
        lim = job.limits
        payload = json.dumps({"code": job.code, "device": job.device, "seed": job.seed,
                              "max_nodes": lim.max_nodes, "max_events": lim.max_events,
                              "output_bytes": lim.output_bytes, "cpu_s": lim.cpu_s}).encode()
        try:
            await write_all(child.job_w, payload)
        except OSError:
            pass  # the child is gone; its exit report says how
        finally:
            with contextlib.suppress(OSError):
                os.close(child.job_w)

    async def _outcome(self, child: _Child, job: Job, ending: Ending, raw_out: bytes,
                       res: CappedReader) -> dict[str, Any]:
        report = child.exit.result() if child.exit.done() else {"lost": True}
        ending.lost = bool(report.get("lost"))
        ending.code = report.get("code")
        ending.signal = report.get("signal")
        ending.cpu_s = float(report.get("cpu_s") or 0.0)
        ending.oom = bool(report.get("oom"))
        ending.result_bytes = res.size
        limited = ending.wall_timeout or ending.output_flood or ending.result_too_large
        if not limited and ending.code == 0 and not res.overflowed:
            doc = await _validate(job, res.data())
            if doc is not None:
                return doc
        status, message = classify_failure(job, ending)
        return supervisor_document(job, status, message, cut_output(raw_out, job.limits.output_bytes))

    def _release(self) -> None:
        assert self._slots is not None
        self._busy -= 1
        self._slots.release()

    # ----------------------------------------------------------------- health
    def state(self) -> RunnerState:
        info = self._info
        ready = self._live and self._ctrl is not None and not self._closing
        return RunnerState(
            kind="forkserver", ready=ready, workers=self.workers, busy=self._busy, queued=self._waiting,
            queue_capacity=self.queue_capacity, cuda_available=bool(info.get("cuda_available")),
            detail={"zygote_pid": info.get("pid"), "layers": info.get("layers", {}),
                    "torch_version": info.get("torch_version"), "idle_children": len(self._idle),
                    "zygote_hugepages_mib": info.get("hugepages_mib"),
                    "sandbox": self.config.sandbox})


async def _validate(job: Job, raw: bytes) -> dict[str, Any] | None:
    """Validate off the event loop when the result is big enough to matter."""
    if len(raw) > (1 << 18):
        return await asyncio.to_thread(validate_result, job, raw)
    return validate_result(job, raw)
