"""Per-job memory and pids cgroups, where the machine lets us have them.

A job's cgroup caps what rlimits cannot: tmpfs pages and page cache are charged to it, and
``pids.max`` holds even if a thread bomb slips past RLIMIT_NPROC. When the memory cgroup kills
a job the kernel sends a bare SIGKILL; the ``oom_kill`` counter tells the supervisor it was
memory, so the user reads "used more than 1024 MiB" instead of "crashed".

NOTE [cgroup attach cost]
    Attaching a process costs about 6 ms on cgroup v1 here. The child attaches itself while it
    is pre-forked and idle, so the cost stays off the request path.

Both cgroup v1 (``memory`` and ``pids`` hierarchies, as on this machine) and v2 (a writable
subtree with both controllers) are handled; anything else degrades to rlimits with the reason
recorded in the pool's state.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class JobCgroup:
    """The cgroup directories of one job (one per v1 hierarchy, or one v2 directory)."""

    memory: Path
    pids: Path
    v2: bool

    def attach(self, pid: int) -> None:
        for path in {self.memory, self.pids}:
            (path / "cgroup.procs").write_text(f"{pid}\n")

    def oom_killed(self) -> bool:
        """True when the kernel's OOM killer hit a process of this job."""
        try:
            text = (self.memory / ("memory.events" if self.v2 else "memory.oom_control")).read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip() not in ("", "0"):
                return True
        return False

    def kill_and_remove(self) -> None:
        """SIGKILL whatever is left inside, then remove the directories."""
        for path in {self.memory, self.pids}:
            for _attempt in range(50):
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                os.sched_yield()
            for _attempt in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    os.sched_yield()


class CgroupFactory:
    """Creates per-job cgroups under one pool-owned parent directory."""

    def __init__(self, memory_parent: Path, pids_parent: Path, v2: bool) -> None:
        self.memory_parent = memory_parent
        self.pids_parent = pids_parent
        self.v2 = v2

    @classmethod
    def detect(cls, name: str, under: str | None = None) -> tuple[CgroupFactory | None, str]:
        """A factory for this machine, or ``None`` and the reason why not.

        ``under`` is a cgroup delegated to a non-root worker (NOTE [rootless worker] in
        ``userns.py``); the pool's cgroups are made inside it instead of at the top.
        """
        sub = Path(under.strip("/")) if under else Path()
        where = f" in {under}" if under else ""
        try:
            if (ROOT / "cgroup.controllers").exists():
                top = ROOT / sub
                top.mkdir(parents=True, exist_ok=True)
                _remove_stale(top)
                parent = top / name
                controllers = (top / "cgroup.controllers").read_text().split()
                if not {"memory", "pids"} <= set(controllers):
                    return None, "cgroup v2 without memory and pids controllers"
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text("+memory +pids\n")
                return cls(parent, parent, True), "cgroup v2 memory+pids" + where
            memory, pids = ROOT / "memory", ROOT / "pids"
            if not (memory / "cgroup.procs").exists() or not (pids / "cgroup.procs").exists():
                return None, "no cgroup v1 memory and pids hierarchies"
            memory, pids = memory / sub, pids / sub
            for root in (memory, pids):
                root.mkdir(parents=True, exist_ok=True)
                _remove_stale(root)
            (memory / name).mkdir(exist_ok=True)
            (pids / name).mkdir(exist_ok=True)
            return cls(memory / name, pids / name, False), "cgroup v1 memory+pids" + where
        except OSError as exc:
            return None, f"cgroups not writable: {exc.strerror or exc}"

    def create(self, job: str, memory_bytes: int, max_pids: int) -> JobCgroup:
        memory, pids = self.memory_parent / job, self.pids_parent / job
        memory.mkdir()
        if pids != memory:
            pids.mkdir()
        cg = JobCgroup(memory, pids, self.v2)
        if self.v2:
            (memory / "memory.max").write_text(f"{memory_bytes}\n")
            (memory / "memory.swap.max").write_text("0\n") if (memory / "memory.swap.max").exists() else None
        else:
            (memory / "memory.limit_in_bytes").write_text(f"{memory_bytes}\n")
            swap = memory / "memory.memsw.limit_in_bytes"
            if swap.exists():
                with contextlib.suppress(OSError):
                    swap.write_text(f"{memory_bytes}\n")
        (pids / "pids.max").write_text(f"{max_pids}\n")
        return cg

    def remove_parent(self) -> None:
        for path in {self.memory_parent, self.pids_parent}:
            with contextlib.suppress(OSError):
                path.rmdir()


def _remove_stale(root: Path) -> None:
    """Remove the cgroups of zygotes that died without cleaning up (``gradtrace-<dead pid>``)."""
    for parent in root.glob("gradtrace-*"):
        try:
            os.kill(int(parent.name.rsplit("-", 1)[1]), 0)
            continue  # that zygote is alive
        except ProcessLookupError:
            pass
        except (ValueError, OSError):
            continue
        for job in parent.glob("job-*"):
            JobCgroup(job, job, False).kill_and_remove()
        with contextlib.suppress(OSError):
            parent.rmdir()
