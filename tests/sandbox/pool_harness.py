"""A real ForkServerPool driven from synchronous tests, plus probes of what a job left behind.

The pool lives on its own event loop; each call runs the loop until the call is done (the
zygote's messages simply wait in the socket between calls). Nothing here is mocked: the zygote,
the jailed children and the kernel layers are the real ones.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from gradtrace.jobs import RUN, Job, JobResult, Limits
from gradtrace.sandbox.config import UID_BASE
from gradtrace.sandbox.pool import ForkServerPool
from gradtrace.schema import RunDocument, document_id
from gradtrace.settings import Settings

T = TypeVar("T")


class PoolHarness:
    """Owns one pool and one loop; ``run(code)`` returns the validated document."""

    def __init__(self, *, warm_compile: bool = False, kind_files: Sequence[str] = (), **overrides: Any) -> None:
        """``warm_compile`` defaults off here: most tests need no torch.compile and start ~6 s faster.
        ``kind_files``: job kinds that exist only in the tests (``ForkServerPool``'s argument)."""
        self.settings = Settings(**overrides)
        self.loop = asyncio.new_event_loop()
        self.pool = ForkServerPool(self.settings, warm_compile=warm_compile, kind_files=kind_files)
        self.call(self.pool.start())

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def limits(self, **kw: Any) -> Limits:
        s = self.settings
        base = dict(timeout_s=s.timeout_s, cpu_s=s.cpu_s, memory_mb=s.memory_mb,
                    output_bytes=s.output_kb * 1024, result_bytes=s.result_mb << 20,
                    max_nodes=s.max_nodes, max_events=s.max_events)
        base.update(kw)
        return Limits(**base)

    def run(self, code: str, *, device: str = "cpu", seed: int | None = 0, **limits: Any) -> dict[str, Any]:
        result = self.call(self.pool.run(Job(code=code, device=device, seed=seed, limits=self.limits(**limits))))
        doc = check_result(result, code)
        self.settle()
        return doc

    def settle(self, timeout: float = 60.0) -> None:
        """Run the loop until every worker slot is free again (the job's exit was reported)."""
        async def wait() -> None:
            while self.pool.state().busy:
                await asyncio.sleep(0.005)

        self.call(wait(), timeout)

    def close(self) -> None:
        try:
            self.call(self.pool.close())
        finally:
            self.loop.close()


def check_result(result: JobResult, code: str) -> dict[str, Any]:
    """Every answer is a typed run result whose fields are its bytes' own, holding a valid run
    document for exactly this code, with a correct id; returns that document."""
    assert result.kind == RUN
    doc = orjson.loads(result.canonical)
    assert result.to_dict() == doc
    assert (result.id, result.status, result.schema_version, result.size) == (
        doc["id"], doc["status"], doc["schema_version"], len(result.canonical))
    check_document(doc, code)
    return doc


def check_document(doc: dict[str, Any], code: str) -> None:
    """A valid run document for exactly this code, with a correct id."""
    RunDocument.model_validate(doc)
    assert doc["code"] == code
    assert doc["id"] == document_id(doc)


def job_processes() -> list[tuple[int, int]]:
    """(pid, uid) of every process on the machine running as a per-job uid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                if uid >= UID_BASE:
                    found.append((int(entry.name), uid))
    return found


def processes_with_uids(uids: set[int]) -> list[int]:
    """Pids of live processes whose real uid is one of ``uids``."""
    return [pid for pid, uid in job_processes() if uid in uids]


def survivors(uids: set[int], grace_s: float = 10.0) -> list[int]:
    """Processes still running as one of ``uids`` once a killed job had ``grace_s`` to be torn down.

    The pool answers as soon as the result is in and the job is killed (NOTE [early result]);
    the kernel then needs a few ms to tear the process down. Anything alive after the grace
    period survived.
    """
    deadline = time.monotonic() + grace_s
    while True:
        alive = processes_with_uids(uids)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)


def job_uids(pids: list[int] | set[int]) -> set[int]:
    """The per-job uids the children with these pids run as (NOTE [per-job uids])."""
    return {UID_BASE + pid for pid in pids}


def used_children(zygote: int, before: set[int], grace_s: float = 10.0) -> set[int]:
    """Which of the zygote's children ``before`` a run have since ended (waiting for the reap)."""
    deadline = time.monotonic() + grace_s
    while True:
        used = before - set(children_of(zygote))
        if used or time.monotonic() > deadline:
            return used
        time.sleep(0.01)


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                kids.append(int(entry.name))
    return kids


class LoopbackListener:
    """A TCP listener on 127.0.0.1 that records whether anything connected to it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def snapshot(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    """(size, mtime_ns, inode) of every file below ``paths``: to prove nothing outside changed."""
    result: dict[str, tuple[int, int, int]] = {}
    for root in paths:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".git")]
            for name in [*filenames, *dirnames]:
                p = os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                result[p] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return result
