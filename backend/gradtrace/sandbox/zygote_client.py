"""The web process's connection to one zygote: start it, keep children ready, kill, restart.

A pool owns one client for CPU jobs and, on a CUDA host, one per GPU (NOTE [cuda workers] in
:mod:`gradtrace.sandbox.pool`). Nothing here imports torch or reads a job's output: the client
only hands out pre-forked children (their pipe ends arrive over the control socket) and
resolves each child's ``exit`` future when the zygote reports how it ended.

NOTE [who kills and who reaps]
    The zygote is the jobs' parent, so only it can reap them. The web process asks it to kill
    (``{"op": "kill"}``); the zygote signals through a pidfd and the process group, which is
    race-free because it alone decides when a pid is reaped and can be reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gradtrace.errors import ServiceUnavailable
from gradtrace.sandbox import protocol
from gradtrace.sandbox.config import ZygoteConfig

START_TIMEOUT_S = 180.0
CHILD_WAIT_S = 30.0
ZYGOTE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
"""NOTE [scrubbed zygote env]
    The zygote gets this environment and nothing else: a job that scans its own memory (ctypes)
    can find whatever the zygote ever held, so the service's secrets must never be there."""


@dataclass
class Child:
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


class ZygoteClient:
    """One zygote and the children it keeps ready (``spares`` of them)."""

    def __init__(self, config: ZygoteConfig, spares: int, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.spares = spares
        self.env = {**ZYGOTE_ENV, **(env or {})}
        self._idle: deque[Child] = deque()
        self._child_waiters: deque[asyncio.Future[Child]] = deque()
        self._children: dict[int, Child] = {}
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
        self._closing = False
        await self._spawn_zygote()

    async def _spawn_zygote(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-m", "gradtrace.sandbox.zygote", str(theirs.fileno()),
                pass_fds=[theirs.fileno()], env=dict(self.env), cwd="/", stdin=asyncio.subprocess.DEVNULL,
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
        self.send({"op": "fork", "n": self.spares})
        deadline = loop.time() + CHILD_WAIT_S
        while len(self._idle) < self.spares and self._ctrl is ours and loop.time() < deadline:
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
    def send(self, message: dict[str, Any]) -> None:
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
            child = Child(int(message["id"]), int(message["pid"]), int(message["uid"]), job_w=fds[0],
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

    def _offer(self, child: Child) -> None:
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
            if self._failed_spawns <= 3 * self.spares:
                self.send({"op": "fork", "n": 1})

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

    async def take_child(self, *, queued: int = 0, replace: bool = True) -> Child:
        """An idle, locked-down child; asks the zygote for its replacement unless ``replace``
        is false (then the caller calls :meth:`replace` later: NOTE [replace after the job]).
        """
        child = self._idle.popleft() if self._idle else None
        if child is None:
            if self._ctrl is None and self._restart is None:
                raise ServiceUnavailable("the sandbox is not running")
            waiter: asyncio.Future[Child] = asyncio.get_running_loop().create_future()
            self._child_waiters.append(waiter)
            try:
                child = await asyncio.wait_for(waiter, CHILD_WAIT_S)
            except TimeoutError:
                raise ServiceUnavailable("no sandbox worker became ready in time; please retry") from None
        child.taken = True
        self._failed_spawns = 0
        if replace:
            self.replace(queued=queued)
        return child

    def replace(self, *, queued: int = 0) -> None:
        """Ask the zygote for one more child. With jobs ``queued`` it will be taken at once, so
        it skips the idle-time pre-fault (NOTE [pre-fault while idle])."""
        self.send({"op": "fork", "n": 1, "prefault": queued == 0})

    def kill(self, child: Child) -> None:
        self.send({"op": "kill", "id": child.cid})

    def stop(self, child: Child) -> None:
        """``WALL_STOP_SIGNAL`` to the job: it stops its snippet and returns the partial document."""
        self.send({"op": "stop", "id": child.cid})

    @property
    def live(self) -> bool:
        return self._live and self._ctrl is not None and not self._closing

    @property
    def info(self) -> dict[str, Any]:
        return self._info

    @property
    def idle(self) -> int:
        return len(self._idle)
