"""Per-job lock-down, run by each pre-forked child before it reads any user byte.

Order matters (NOTE [lock-down order]):
    1. ``setsid`` + parent-death signal: the job is its own process group, which the supervisor
       kills as a whole, and it dies if the zygote does.
    2. (root) cgroup attach, a new mount namespace in which the whole tree is read-only, a fresh
       per-job tmpfs on ``/tmp`` (the only writable place) and a ``/proc`` that shows only the
       job's own processes (``hidepid``).
    3. stdio onto the job pipes, every other fd closed, environment cleared.
    4. rlimits (address space, CPU soft+hard, processes, file size, open files, no core).
    5. (root) Landlock rules built while every path can still be opened.
    6. per-job uid/gid, no supplementary groups: all capabilities are gone from here on.
    7. ``no_new_privs``, not dumpable, Landlock enforced, seccomp loaded last.
Only then does the child read the job from fd 0.
"""

from __future__ import annotations

import glob
import os
import resource
import signal
from dataclasses import dataclass
from typing import Any

from gradtrace.sandbox import landlock, linux
from gradtrace.sandbox.cgroups import JobCgroup
from gradtrace.sandbox.config import ZygoteConfig

SYSTEM_READ_PATHS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share/zoneinfo",
                     "/etc/ld.so.cache", "/etc/localtime", "/dev/zero", "/dev/urandom", "/dev/random",
                     "/proc")
WRITABLE_DEVICES = ("/dev/null", "/dev/full")
RESULT_FD = 3


@dataclass
class JailPlan:
    """What the zygote prepared once for every child: the filter, the paths, the limits."""

    config: ZygoteConfig
    zygote_pid: int
    address_space: int
    read_paths: list[str]
    landlock_abi: int
    seccomp_filter: Any | None
    layers: dict[str, str]
    drop_uid: bool = False
    """Run each job as its own uid (needs root in the zygote)."""
    private_mounts: bool = False
    """Give each job a private mount view (needs the zygote's mount namespace to have worked)."""


def _die_with_parent(zygote_pid: int) -> None:
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != zygote_pid:
        os._exit(1)


def _under_tmp(paths: list[str]) -> list[str]:
    """The outermost of ``paths`` that lie below ``/tmp`` (nested ones ride along)."""
    inside = sorted(p for p in paths if p.startswith("/tmp/"))
    outer: list[str] = []
    for path in inside:
        if not any(path.startswith(o + "/") for o in outer):
            outer.append(path)
    return outer


def _private_view(plan: JailPlan, uid: int) -> None:
    """A read-only tree with a fresh tmpfs on ``/tmp``.

    NOTE [installs under /tmp]
        When the interpreter, the venv or the checkout lives below ``/tmp`` (a CI clone, a test
        install), the per-job tmpfs would hide it and lazy imports inside the job would fail.
        Those directories are cloned (``open_tree``) before the tmpfs goes on and attached
        again, read-only, at the same paths inside it.
    """
    cfg = plan.config
    linux.unshare(linux.CLONE_NEWNS)
    linux.make_tree_readonly("/")
    kept = [(path, linux.clone_tree(path)) for path in _under_tmp(plan.read_paths)]
    linux.mount("tmpfs", "/tmp", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
                f"size={cfg.tmp_mb}m,nr_inodes={cfg.tmp_inodes},mode=0700,uid={uid},gid={uid}")
    for path, tree in kept:
        os.makedirs(path, mode=0o755, exist_ok=True)
        linux.attach_tree(tree, path)
        os.close(tree)
        linux.make_tree_readonly(path)
    linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
                "hidepid=invisible,subset=pid")


def _stdio(job_r: int, out_w: int, res_w: int) -> None:
    # Move the pipe ends above the target numbers first so dup2 never clobbers one of them.
    moved = [os.dup(fd) for fd in (job_r, out_w, res_w)]
    os.dup2(moved[0], 0)
    os.dup2(moved[1], 1)
    os.dup2(moved[1], 2)
    os.dup2(moved[2], RESULT_FD)
    os.closerange(RESULT_FD + 1, 1 << 16)
    for fd in (0, 1, 2, RESULT_FD):
        os.set_inheritable(fd, False)


def _environment(workdir: str) -> None:
    os.environ.clear()
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "PATH": "/nonexistent"})
    os.chdir(workdir)


def _rlimits(plan: JailPlan) -> None:
    cfg = plan.config
    limits = {
        resource.RLIMIT_CPU: (cfg.cpu_s, cfg.cpu_s + 1),
        resource.RLIMIT_FSIZE: (cfg.fsize_mb << 20, cfg.fsize_mb << 20),
        resource.RLIMIT_NOFILE: (cfg.nofile, cfg.nofile),
        resource.RLIMIT_CORE: (0, 0),
    }
    if not cfg.cuda:  # CUDA reserves tens of GiB of address space; GPU jobs rely on the cgroup
        limits[resource.RLIMIT_AS] = (plan.address_space, plan.address_space)
    if plan.drop_uid:  # NPROC counts the real uid; for a shared uid it would hit other processes.
        limits[resource.RLIMIT_NPROC] = (cfg.nproc, cfg.nproc)
    for which, value in limits.items():
        resource.setrlimit(which, value)


def _landlock_rules(plan: JailPlan, workdir: str) -> landlock.Ruleset | None:
    if plan.landlock_abi <= 0:
        return None
    rules = landlock.Ruleset(plan.landlock_abi)
    for path in plan.read_paths:
        rules.allow(path)
    gpu_devices = glob.glob("/dev/nvidia*") if plan.config.cuda else []
    for path in (workdir, *WRITABLE_DEVICES, *gpu_devices):
        rules.allow(path, write=True)
    return rules


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def lock_down(plan: JailPlan, *, uid: int, cgroup: JobCgroup | None, job_r: int, out_w: int,
              res_w: int, workdir: str) -> None:
    """Apply every layer to the calling (freshly forked) child; see the module docstring."""
    os.setsid()
    _die_with_parent(plan.zygote_pid)
    if cgroup is not None:
        cgroup.attach(os.getpid())
    if plan.private_mounts:
        _private_view(plan, uid)
    elif plan.drop_uid:
        os.chown(workdir, uid, uid)  # a per-job directory made by the zygote stands in for the tmpfs
    _stdio(job_r, out_w, res_w)
    _environment(workdir)
    _rlimits(plan)
    rules = _landlock_rules(plan, workdir)
    if plan.drop_uid:
        _drop_privileges(uid)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)
    if rules is not None:
        rules.restrict_self()
    if plan.seccomp_filter is not None:
        plan.seccomp_filter.load()
