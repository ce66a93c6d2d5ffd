"""A worker that is not root keeps every sandbox layer, and holds against the hostile suite.

The test creates a throw-away system user with a subordinate uid/gid range and a cgroup
delegated to it (the grants the README names, NOTE [rootless worker] in
``gradtrace/sandbox/userns.py``), starts ``gradtrace worker`` as that user behind a real API
and Redis, checks that ``/healthz`` lists every layer as active, and sends every case of
``tests/security/test_hostile_snippets.py`` through the queue to it.

On this machine Python lives under ``/root`` (mode 0700), which a non-root user cannot
traverse; the launcher re-exposes only the interpreter's directory to the worker, in a mount
namespace of its own, the way the zygote does for job uids (NOTE [interpreter under a 0700
directory] in ``gradtrace/sandbox/namespaces.py``). In the Docker image Python is under /opt.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import gradtrace.sandbox.zygote_client as source_module
from gradtrace.sandbox.namespaces import _first_closed_ancestor
from sandbox.pool_harness import LoopbackListener, snapshot
from scale.fleet import Fleet, fleet, health
from security.bait import ORDINARY, Bait
from security.test_hostile_snippets import CASES, Case, _check_expectation

pytestmark = pytest.mark.security

LAYERS = ("rlimits", "env", "fds", "uid", "no_new_privs", "seccomp", "landlock", "cgroup", "netns", "ipcns",
          "mountns")
LIMITS = {"GRADTRACE_TIMEOUT_S": "2", "GRADTRACE_CPU_S": "1", "GRADTRACE_MEMORY_MB": "384",
          "GRADTRACE_OUTPUT_KB": "16", "GRADTRACE_MAX_NODES": "1000", "GRADTRACE_MAX_EVENTS": "4000",
          "GRADTRACE_QUEUE_SIZE": "64", "GRADTRACE_QUEUE_WAIT_S": "60"}
CGROUP_ROOTS = [Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup/pids")]


@contextlib.contextmanager
def unprivileged_user() -> Iterator[str]:
    """A system user with 100000 subordinate uids/gids, removed afterwards."""
    name = f"gtrl{os.getpid()}"
    first = 300_000_000 + (os.getpid() % 1000) * 100_000
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    try:
        last = first + 99_999
        subprocess.run(["usermod", "--add-subuids", f"{first}-{last}", "--add-subgids", f"{first}-{last}", name],
                       check=True, capture_output=True)
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@contextlib.contextmanager
def delegated_cgroup(user: str) -> Iterator[str | None]:
    """One cgroup v1 memory+pids directory owned by ``user`` (None where the host has none)."""
    name = f"gradtrace-test-{os.getpid()}"
    if not all((root / "cgroup.procs").exists() for root in CGROUP_ROOTS):
        yield None
        return
    made = []
    try:
        for root in CGROUP_ROOTS:
            (root / name).mkdir()
            made.append(root / name)
            shutil.chown(root / name, user)
            for f in (root / name).iterdir():
                with contextlib.suppress(OSError):
                    shutil.chown(f, user)
        yield name
    finally:
        for top in made:
            for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    d.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()


def launcher(user: str) -> list[str]:
    """Root → a private mount namespace (interpreter re-exposed) → ``setpriv`` to ``user``."""
    needed = os.path.realpath(sys.base_prefix)
    closed = _first_closed_ancestor(needed) or ""
    script = ('set -e\nif [ -n "$2" ]; then t=$(mktemp -d); mount --bind "$1" "$t"; '
              'mount -t tmpfs -o mode=0755,size=64k tmpfs "$2"; mkdir -p "$1"; mount --move "$t" "$1"; fi\n'
              'u=$3; shift 3\nexec setpriv --reuid="$u" --regid="$u" --clear-groups --inh-caps=-all "$@"\n')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", needed, closed, user]


@pytest.fixture(scope="module")
def bait() -> Iterator[Bait]:
    secret = "gt-secret-" + secrets.token_hex(12)
    data_dir = Path(tempfile.mkdtemp(prefix="gradtrace-sec-data-"))
    data_dir.chmod(0o755)
    (data_dir / "gradtrace.db").write_text("db-secret-" + secrets.token_hex(12))
    canary_dir = Path(tempfile.mkdtemp(prefix="gradtrace-canary-", dir="/var/tmp"))
    canary_dir.chmod(0o777)
    canary = canary_dir / "canary.txt"
    canary.write_text("untouched\n")
    canary.chmod(0o666)
    listener = LoopbackListener()
    try:
        yield Bait(secret, data_dir, data_dir / "gradtrace.db", canary_dir, canary, Path(source_module.__file__),
                   "NOTE [who kills and who reaps]", listener)
    finally:
        listener.close()
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(canary_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def rootless(bait: Bait) -> Iterator[Fleet]:
    if os.geteuid() != 0:
        pytest.skip("creating a throw-away unprivileged user needs root (CI and `make test` as root run it)")
    missing = [b for b in ("useradd", "unshare", "setpriv", "newuidmap") if not shutil.which(b)]
    if missing:
        pytest.fail(f"{missing} not found: run `make test`, which installs uidmap")
    with unprivileged_user() as user, delegated_cgroup(user) as cgroup:
        env = {**LIMITS, "GRADTRACE_TEST_SECRET": bait.secret, "GRADTRACE_TEST_USER": user, "HOME": "/tmp"}
        if cgroup:
            env["GRADTRACE_CGROUP_PARENT"] = cgroup
        with fleet(env, apis=1, workers=1, concurrency=2, prefix=launcher(user), data_dir=bait.data_dir) as f:
            yield f


def test_a_non_root_worker_has_every_layer_active(rootless: Fleet) -> None:
    (worker,) = [w for w in health(rootless.apis[0])["runner"]["queue"]["registered"]]
    assert worker["ready"]
    layers = health(rootless.apis[0])["runner"]["isolation"]
    off = {name: state for name, state in layers.items() if not state.startswith("active")}
    assert off == {}, off
    assert set(LAYERS) <= set(layers)
    # It is not root on this machine: the worker's processes belong to the test user.
    uid = pwd.getpwnam(rootless.env["GRADTRACE_TEST_USER"]).pw_uid
    owners = {Path(f"/proc/{pid}").stat().st_uid for pid in descendants(rootless.workers[0].proc.pid)
              if b"--in-userns" in Path(f"/proc/{pid}/cmdline").read_bytes()}
    assert owners == {uid}, owners


def descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if proc.name.isdigit():
                parents[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        found += kids
        frontier += kids
    return found


def _run(f: Fleet, code: str) -> dict[str, Any]:
    r = httpx.post(f.apis[0].url + "/api/runs", json={"code": code}, timeout=60)
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


def test_the_hostile_suite_is_contained_by_the_rootless_worker(rootless: Fleet, bait: Bait) -> None:
    files = snapshot([bait.canary_dir, bait.data_dir])
    before = bait.listener.connections

    def one(case: Case) -> tuple[str, str | None]:
        code = case.code.format(**bait.values())
        r = httpx.post(rootless.apis[0].url + "/api/runs", json={"code": code}, timeout=60)
        if r.status_code == 422 and "\x00" in code:
            return case.id, None  # the API refuses NUL bytes before any worker sees them
        doc = r.json()
        try:
            _check_expectation(case, doc)
            assert bait.leaks(json.dumps(doc, ensure_ascii=False)) == [], "leak"
        except AssertionError as exc:
            return case.id, str(exc)[:300]
        return case.id, None

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, CASES))
    failed = {case: why for case, why in results if why is not None}
    assert failed == {}, failed
    assert bait.listener.connections == before
    assert snapshot([bait.canary_dir, bait.data_dir]) == files
    assert bait.canary_file.read_text() == "untouched\n"
    after = _run(rootless, ORDINARY + "print(x.grad.tolist())\n")
    assert after["status"] == "ok" and after["stdout"] == "[2.0, 4.0, 6.0]\n"
    assert health(rootless.apis[0])["runner"]["queue"]["devices"]["cpu"]["workers"] == 1


def test_sigterm_to_the_rootless_worker_drains_it_through_its_user_namespace(rootless: Fleet) -> None:
    # A container runtime signals the outer `gradtrace worker`, which stays the parent of the one
    # inside the user namespace and passes the signal on (NOTE [drain on SIGTERM]).
    import signal
    import threading
    import time

    import redis

    worker = rootless.workers[0]
    client = redis.Redis.from_url(rootless.redis.url)
    got: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: got.append(httpx.post(
        rootless.apis[0].url + "/api/runs", json={"code": "import time\ntime.sleep(1.5)\nprint('slept')\n"},
        timeout=120)))
    thread.start()
    deadline = time.monotonic() + 60
    # set when the job starts (a starved poll may miss its 1.5 s: the answer then came already)
    while not any(True for _ in client.scan_iter("gradtrace:running:*")) and not got:
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.05)
    client.close()
    os.kill(worker.proc.pid, signal.SIGTERM)
    assert worker.proc.wait(60) == 0, worker.log()[-3000:]
    thread.join(60)
    assert got and got[0].status_code == 200, got
    assert got[0].json()["status"] == "ok" and got[0].json()["stdout"] == "slept\n"
