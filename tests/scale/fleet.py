"""Real processes on loopback for the scale-out tests: redis-server, workers, API replicas.

Redis is Debian's ``redis-server`` (``make system-test-deps`` installs it), started without
persistence on a free port; ``restart()`` keeps the port, as a restarted Redis in a deployment
keeps its address. Workers are real ``gradtrace worker`` processes, each in its own session so
a test can SIGKILL exactly one of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as redis_py

from conftest import Server, free_port, launch_server, stop_server
from conftest import _wait_healthy as wait_healthy

ROOT = Path(__file__).resolve().parents[2]


def require_redis() -> str:
    path = shutil.which("redis-server")
    if path is None:
        pytest.fail("redis-server is not installed: run `make test`, which installs Debian's redis-server")
    return path


class RedisServer:
    """``redis-server`` on 127.0.0.1:port, no persistence (a restart loses every key)."""

    def __init__(self) -> None:
        self.binary = require_redis()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="gradtrace-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = (self.dir / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        wait_until(self._answers, 10.0, "redis-server did not answer")

    def _answers(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass
class WorkerProc:
    proc: subprocess.Popen[bytes]
    log_path: Path
    device: str = "cpu"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def worker_env(env: Mapping[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GRADTRACE_")}
    return {**base, "GRADTRACE_LOG_LEVEL": "warning", **env}


WORKER_WITH_KINDS = (
    "import sys\n"
    "from gradtrace.queue.worker import run_worker\n"
    "from gradtrace.settings import Settings\n"
    "sys.exit(run_worker(Settings(), device='cpu', concurrency=int(sys.argv[1]), warm_compile=False,\n"
    "                    kind_files=sys.argv[2:]))\n")
"""``gradtrace worker`` with job kinds that exist only in the tests (``kind_files``)."""


def launch_worker(env: Mapping[str, str], *, concurrency: int = 1, prefix: list[str] | None = None,
                  data_dir: Path | None = None, kind_files: Sequence[str] = ()) -> WorkerProc:
    """``gradtrace worker`` (no torch.compile warm-up: starts ~6 s sooner), optionally under ``prefix``;
    with ``kind_files``, the same worker started from Python with those job kinds added."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="gradtrace-worker-"))
    data_dir.chmod(0o755)
    log_path = data_dir / "worker.log"
    cmd = [*(prefix or []), sys.executable, "-m", "gradtrace.cli", "worker", "--device", "cpu",
           "--concurrency", str(concurrency), "--no-warm-compile"]
    if kind_files:
        cmd = [*(prefix or []), sys.executable, "-c", WORKER_WITH_KINDS, str(concurrency), *kind_files]
    with log_path.open("ab") as log:
        proc = subprocess.Popen(cmd, env=worker_env({"GRADTRACE_DATA_DIR": str(data_dir), **env}),
                                stdout=log, stderr=subprocess.STDOUT, cwd=str(data_dir), start_new_session=True)
    return WorkerProc(proc, log_path)


def wait_until(check: Callable[[], Any], timeout_s: float, what: str, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"{what} (after {timeout_s} s)")


def health(server: Server) -> dict[str, Any]:
    r = httpx.get(server.url + "/healthz", timeout=5)
    r.raise_for_status()
    body: dict[str, Any] = r.json()
    return body


def registered(server: Server, device: str = "cpu") -> list[dict[str, Any]]:
    queue = health(server)["runner"].get("queue") or {}
    return [w for w in queue.get("registered", []) if w.get("device") == device]


@dataclass
class Fleet:
    """Redis, API replicas and workers; ``close()`` stops every process it started."""

    redis: RedisServer
    env: dict[str, str]
    apis: list[Server] = field(default_factory=list)
    workers: list[WorkerProc] = field(default_factory=list)

    def add_worker(self, *, wait: bool = True, env: Mapping[str, str] | None = None, **kwargs: Any) -> WorkerProc:
        worker = launch_worker({**self.env, **(env or {})}, **kwargs)
        self.workers.append(worker)
        if wait:
            self.wait_registered(worker)
        return worker

    def wait_registered(self, worker: WorkerProc, timeout_s: float = 90.0) -> None:
        """Until this worker's own entry is in the registry (a worker killed just before keeps
        its entry for the registry's TTL, so counting entries would race with its expiry)."""
        def listed() -> bool:
            if worker.proc.poll() is not None:
                raise AssertionError(f"worker exited with {worker.proc.returncode}:\n{worker.log()[-3000:]}")
            try:
                return any(w.get("pid") == worker.proc.pid for w in registered(self.apis[0], worker.device))
            except httpx.HTTPError:
                return False

        wait_until(listed, timeout_s, f"worker {worker.proc.pid} did not register", every=0.2)

    def wait_workers(self, n: int, worker: WorkerProc | None = None, timeout_s: float = 90.0) -> None:
        def enough() -> bool:
            for w in [worker] if worker is not None else self.workers:
                if w.proc.poll() is not None:
                    raise AssertionError(f"worker exited with {w.proc.returncode}:\n{w.log()[-3000:]}")
            try:
                return len(registered(self.apis[0])) >= n
            except httpx.HTTPError:
                return False

        wait_until(enough, timeout_s, f"{n} workers did not register", every=0.2)

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()
        for api in self.apis:
            stop_server(api)
        self.redis.close()


@contextlib.contextmanager
def fleet(env: Mapping[str, str], *, apis: int, workers: int, **worker_kwargs: Any) -> Iterator[Fleet]:
    """Redis, ``workers`` workers and ``apis`` replicas, all started at once; ready when it yields."""
    redis = RedisServer()
    f = Fleet(redis, {"GRADTRACE_REDIS_URL": redis.url, **env})
    try:
        f.workers.extend(launch_worker(f.env, **worker_kwargs) for _ in range(workers))
        f.apis.extend(launch_server({"GRADTRACE_RUNNER": "queue", **f.env}, wait=False) for _ in range(apis))
        f.wait_workers(workers)
        for api in f.apis:
            wait_healthy(api, 60.0)
        yield f
    finally:
        f.close()


def post(f: Fleet, code: str, *, api: int = 0, timeout: float = 30.0, **body: Any) -> httpx.Response:
    return httpx.post(f.apis[api].url + "/api/runs", json={"code": code, **body}, timeout=timeout)


class Background:
    """A POST in a thread; ``.response`` once it answered, ``.elapsed`` its duration."""

    def __init__(self, f: Fleet, code: str, api: int = 0, **kwargs: Any) -> None:
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None
        self.elapsed = 0.0

        def go() -> None:
            t0 = time.monotonic()
            try:
                self.response = post(f, code, api=api, **kwargs)
            except BaseException as exc:
                self.error = exc
            self.elapsed = time.monotonic() - t0

        self.thread = threading.Thread(target=go, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 30.0) -> httpx.Response:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request hung"
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def entries(f: Fleet) -> list[dict[str, Any]]:
    """The registry as it is in Redis now (the API's snapshot may be half a second old)."""
    client = redis_py.Redis.from_url(f.redis.url)
    try:
        raw = [client.get(key) for key in client.scan_iter("gradtrace:worker:cpu:*")]
        return [json.loads(r) for r in raw if r]
    finally:
        client.close()


def counters(f: Fleet) -> dict[str, tuple[int, int, int]]:
    """id -> (busy, started, finished)."""
    return {w["id"]: (w["busy"], w["started"], w["finished"]) for w in entries(f)}


def busy(f: Fleet) -> int:
    return sum(w["busy"] for w in entries(f))


def started_total(f: Fleet) -> int:
    return sum(s for _b, s, _f in counters(f).values())


def queued(f: Fleet, device: str = "cpu") -> int:
    """Jobs in arq's queue for ``device``: the running ones and the waiting ones."""
    client = redis_py.Redis.from_url(f.redis.url)
    try:
        return int(client.zcard(f"gradtrace:queue:{device}"))
    finally:
        client.close()
