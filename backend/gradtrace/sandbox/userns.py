"""Every sandbox layer for a worker that is not root: re-enter through an unprivileged user namespace.

NOTE [rootless worker]
    The root-only layers (per-job uid, mount/net/ipc/uts namespaces, the per-job ``/proc``,
    cgroups) need capabilities, not the host's root. A non-root ``gradtrace worker`` re-executes
    itself under util-linux ``unshare --map-root-user --map-users=… --pid --fork --mount-proc``:
    inside, it is uid 0 of a user namespace it owns, in its own pid namespace, and the zygote
    applies every layer exactly as it does as real root. The grants it needs, and nothing more:

    * the kernel allows unprivileged user namespaces (``user.max_user_namespaces`` > 0);
    * a subordinate uid/gid range for the worker's user in ``/etc/subuid`` and ``/etc/subgid``
      (Debian's ``uidmap`` package provides the setuid ``newuidmap``/``newgidmap`` that map it),
      at least ``/proc/sys/kernel/pid_max`` ids long: job uids are ``UID_BASE + pid``
      (NOTE [per-job uids] in ``config.py``) and are mapped onto that range;
    * for the cgroup layer, one cgroup delegated to the worker's user (created and ``chown``-ed
      by root once, named by ``GRADTRACE_CGROUP_PARENT``). Each worker makes its own
      ``worker-<pid>`` inside it, so workers whose pid namespaces reuse pids never collide.

    Where a grant is missing, the worker still starts and ``/healthz`` names the layer that is
    off and why (the zygote probes what it actually got).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
from pathlib import Path

from gradtrace.sandbox.cgroups import ROOT, JobCgroup
from gradtrace.sandbox.config import UID_BASE
from gradtrace.settings import Settings

log = logging.getLogger("gradtrace.worker")


def subordinate_range(user: str, uid: int, path: str) -> tuple[int, int] | None:
    """``(first, count)`` of the first ``/etc/subuid``-style range of ``user`` (or its uid)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.strip().split(":")
        if len(parts) == 3 and parts[0] in (user, str(uid)) and parts[1].isdigit() and parts[2].isdigit():
            return int(parts[1]), int(parts[2])
    return None


def pid_max() -> int:
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return 1 << 22


def unshare_command(settings: Settings) -> tuple[list[str], str] | None:
    """The ``unshare`` prefix for a non-root worker and why, or None where it does not apply."""
    if os.geteuid() == 0 or not settings.userns:
        return None
    unshare = shutil.which("unshare")
    if unshare is None:
        log.warning("util-linux unshare is not installed: the root-only sandbox layers stay off")
        return None
    uid, gid = os.getuid(), os.getgid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    cmd = [unshare, "--map-root-user", "--pid", "--fork", "--kill-child", "--mount-proc"]
    uids = subordinate_range(user, uid, "/etc/subuid")
    gids = subordinate_range(user, gid, "/etc/subgid")
    if uids and gids and shutil.which("newuidmap") and shutil.which("newgidmap"):
        count = min(uids[1], gids[1])
        if count < pid_max():
            log.warning("the subordinate range of %s has %d ids, fewer than pid_max (%d): jobs whose pid "
                        "is beyond it cannot start", user, count, pid_max())
        cmd += [f"--map-users={uids[0]},{UID_BASE},{count}", f"--map-groups={gids[0]},{UID_BASE},{count}"]
        why = f"user namespace with uids {UID_BASE}+{count} mapped onto {uids[0]}+"
    else:
        why = "user namespace without a subordinate range (per-job uids stay off)"
    return cmd, why


def delegated_cgroup(settings: Settings) -> str | None:
    """This worker's own cgroup below the delegated one, after removing those of dead workers."""
    if not settings.cgroup_parent:
        return None
    parent = settings.cgroup_parent.strip("/")
    bases = [ROOT / parent] if (ROOT / "cgroup.controllers").exists() else \
        [ROOT / "memory" / parent, ROOT / "pids" / parent]
    for base in bases:
        for stale in base.glob("worker-*"):
            try:
                os.kill(int(stale.name.split("-", 1)[1]), 0)
                continue
            except ProcessLookupError:
                pass
            except (ValueError, OSError):
                continue
            _remove_tree(stale)
    return f"{parent}/worker-{os.getpid()}"


def _remove_tree(path: Path) -> None:
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        JobCgroup(child, child, False).kill_and_remove()
    JobCgroup(path, path, False).kill_and_remove()


def fit_pid_max() -> str | None:
    """Inside the worker's own pid namespace, keep every pid within the mapped job uids.

    ``pid_max`` is per pid namespace (Linux 6.14+), and the namespace's owner may lower it; job
    uids are ``UID_BASE + pid``, so a pid_max no larger than the mapped range makes every job
    uid exist. Returns what was done, or None when there was nothing to do or it was refused.
    """
    try:
        maps = [tuple(int(v) for v in line.split()) for line in Path("/proc/self/uid_map").read_text().splitlines()]
        count = next((c for inner, _outer, c in maps if inner == UID_BASE), None)
        if count is None or pid_max() <= count:
            return None
        Path("/proc/sys/kernel/pid_max").write_text(f"{count}\n")
        return f"pid_max of this pid namespace lowered to {count} (the mapped job uids)"
    except (OSError, ValueError) as exc:
        log.warning("could not fit pid_max to the mapped uids: %s", exc)
        return None


def run_inside(argv: list[str], env: dict[str, str]) -> int:
    """Run the worker under ``unshare`` and stay its parent, passing SIGTERM/SIGINT on.

    ``unshare --fork`` blocks SIGTERM and SIGINT while it waits for its child, so a plain exec
    would leave a container's stop signal unanswered. This process keeps the worker in its own
    process group and signals the group instead; if this process is SIGKILLed, ``unshare`` gets
    SIGKILL too (parent-death signal) and takes the worker with it (``--kill-child``).
    """
    import signal
    import subprocess

    from gradtrace.sandbox import linux

    def die_with_parent() -> None:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)

    proc = subprocess.Popen(argv, env=env, process_group=0, preexec_fn=die_with_parent)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    return proc.wait()
