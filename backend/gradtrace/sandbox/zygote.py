"""The zygote: a warm, torch-importing process that forks locked-down job children.

Started by :class:`gradtrace.sandbox.pool.ForkServerPool` as ``python -I -m
gradtrace.sandbox.zygote <control fd>`` from a scrubbed environment. It never runs user code
itself and never reads a user byte: it only forks children, hands their pipe ends to the web
process, kills them when asked and reports how they ended.

NOTE [torch threads before fork]
    libgomp hangs in a forked child if the parent ever ran a multi-threaded op, so the zygote
    sets ``torch.set_num_threads(1)`` (and one inter-op thread) right after importing torch,
    before warming anything up. Jobs run with one thread too.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from gradtrace.collector import freeze_before_fork
from gradtrace.sandbox import child, jail, kinds, landlock, linux, namespaces, protocol
from gradtrace.sandbox.cgroups import CgroupFactory, JobCgroup
from gradtrace.sandbox.config import ZygoteConfig
from gradtrace.sandbox.kinds import KindTable
from gradtrace.sandbox.protocol import EXIT_INTERNAL, EXIT_SETUP_FAILED

_hard_exit = os._exit
ADDRESS_SLACK = 128 << 20
"""Address space beyond the memory budget: a few thread stacks of 8 MiB and one more glibc arena.

NOTE [two memory limits]
    RLIMIT_AS is the limit a snippet normally meets: the allocation fails at once with a clean
    MemoryError/RuntimeError, reported as memory_limit. The memory cgroup is set higher (budget +
    tmpfs + twice this slack) as the backstop for what address space does not count (tmpfs pages); a
    cgroup OOM kill is slow (the kernel reclaims first, ~1-2 s) and loses the snippet's output."""


@dataclass
class _ChildRecord:
    pid: int
    uid: int
    pidfd: int
    cgroup: JobCgroup | None
    workdir: str | None


def _warm_torch(warm_compile: bool) -> tuple[str, bool, int]:
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # numpy is optional
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    from gradtrace.capture import warm_up

    _import_all("gradtrace.capture")
    _import_all("gradtrace.gradcheck")  # the gradcheck kind's child side
    warm_up()
    if warm_compile:
        _warm_compile()
    # NVML-based checks (PYTORCH_NVML_BASED_CUDA_CHECK=1 in our env) do not initialise CUDA,
    # so forking stays safe; CUDA is only ever initialised in a child (NOTE [cuda workers]).
    cuda = bool(torch.cuda.is_available())
    return str(torch.__version__), cuda, torch.cuda.device_count() if cuda else 0


def _warm_compile() -> None:
    """Import and exercise torch.compile once, so a job's compile takes ~0.3 s instead of ~7 s.

    Lesson 15 compiles with ``backend="aot_eager"``; cold, dynamo's imports and first trace take
    longer than the 5 s limit. The zygote pays once (it costs ~100 MB of shared memory, which
    copy-on-write keeps shared). A failure here only makes compiling snippets slower.
    """
    import torch

    def f(x: torch.Tensor) -> torch.Tensor:
        return (torch.sin(x) * x).sum()

    try:
        x = torch.randn(4, requires_grad=True)
        torch.compile(f, backend="aot_eager")(x).backward()  # type: ignore[no-untyped-call]
        torch._dynamo.reset()
    except Exception as exc:
        print(f"gradtrace zygote: torch.compile warm-up failed: {exc!r}", file=sys.stderr)


def _init_cuda_in_child() -> None:
    """A fresh child of a GPU zygote brings CUDA up while idle, before it locks down."""
    import torch

    torch.cuda.init()  # type: ignore[no-untyped-call]
    torch.ones(1, device="cuda").sum().item()


def _import_all(package: str) -> None:
    """Import every submodule now: jobs cannot read the service's source tree later."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=f"{package}."):
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # a broken optional module must not keep every job from running
            print(f"gradtrace zygote: cannot pre-import {info.name}: {exc!r}", file=sys.stderr)


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Zygote:
    """The fork loop: control messages in, children out, exits reported."""

    def __init__(self, ctrl: socket.socket, plan: jail.JailPlan, cgroups: CgroupFactory | None,
                 table: KindTable) -> None:
        self.ctrl = ctrl
        self.plan = plan
        self.table = table
        self.cgroups = cgroups
        self.children: dict[int, _ChildRecord] = {}
        self.next_id = 0
        self.selector = selectors.DefaultSelector()
        self.selector.register(ctrl, selectors.EVENT_READ, None)

    def spawn(self, prefault: bool = True) -> None:
        cfg = self.plan.config
        cid = self.next_id
        self.next_id += 1
        cgroup = None
        if self.cgroups is not None:
            cgroup = self.cgroups.create(f"job-{cid}", ((cfg.memory_mb + cfg.tmp_mb) << 20)
                                         + 2 * ADDRESS_SLACK, cfg.nproc)
        workdir = None if self.plan.private_mounts else tempfile.mkdtemp(prefix="gradtrace-job-")
        job_r, job_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        res_r, res_w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child, which always _exits
            self._child_main(cgroup, workdir, job_r, out_w, res_w, prefault)
        for fd in (job_r, out_w, res_w):
            os.close(fd)
        uid = cfg.uid_base + pid if self.plan.drop_uid else os.getuid()
        pidfd = os.pidfd_open(pid)
        self.children[cid] = _ChildRecord(pid, uid, pidfd, cgroup, workdir)
        self.selector.register(pidfd, selectors.EVENT_READ, cid)
        try:
            protocol.send(self.ctrl, {"type": "child", "id": cid, "pid": pid, "uid": uid},
                          [job_w, out_r, res_r])
        finally:
            for fd in (job_w, out_r, res_r):
                os.close(fd)

    def _child_main(self, cgroup: JobCgroup | None, workdir: str | None, job_r: int, out_w: int,
                    res_w: int, prefault: bool) -> None:
        try:
            cfg = self.plan.config
            uid = cfg.uid_base + os.getpid() if self.plan.drop_uid else os.getuid()
            if cfg.cuda:
                _init_cuda_in_child()
            jail.lock_down(self.plan, uid=uid, cgroup=cgroup, job_r=job_r, out_w=out_w, res_w=res_w,
                           workdir=workdir or "/tmp")
        except BaseException as exc:
            try:
                os.write(2, f"gradtrace job child: lock-down failed: {exc!r}\n".encode())
            finally:
                os._exit(EXIT_SETUP_FAILED)
        try:
            child.serve(self.table, prefault=prefault)
        finally:
            _hard_exit(EXIT_INTERNAL)  # never return into the zygote's loop

    def stop(self, cid: int) -> None:
        """Ask the job to stop and hand in what it recorded (NOTE [stop, then kill] in child.py)."""
        rec = self.children.get(cid)
        if rec is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(rec.pidfd, protocol.WALL_STOP_SIGNAL)

    def kill(self, cid: int) -> None:
        rec = self.children.get(cid)
        if rec is None:
            return
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(rec.pidfd, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(rec.pid, signal.SIGKILL)

    def reap(self, cid: int) -> None:
        rec = self.children.pop(cid)
        self.selector.unregister(rec.pidfd)
        _pid, status, usage = os.wait4(rec.pid, 0)
        with contextlib.suppress(OSError):
            os.killpg(rec.pid, signal.SIGKILL)  # anything left in the job's process group
        os.close(rec.pidfd)
        oom = rec.cgroup.oom_killed() if rec.cgroup is not None else False
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):  # at shutdown the web side may be gone already
            protocol.send(self.ctrl, {
                "type": "exit", "id": cid, "pid": rec.pid, "code": code if code >= 0 else None,
                "signal": -code if code < 0 else None, "cpu_s": usage.ru_utime + usage.ru_stime,
                "maxrss_kb": usage.ru_maxrss, "oom": oom})
        # Slow part after the report (removing a memory cgroup takes ms): the job can no longer
        # fork (seccomp), and the process group was killed above, so nothing of it runs now.
        if rec.cgroup is not None:
            rec.cgroup.kill_and_remove()
        if rec.workdir is not None:
            shutil.rmtree(rec.workdir, ignore_errors=True)

    def shutdown(self) -> None:
        for cid in list(self.children):
            self.kill(cid)
        for cid in list(self.children):
            with contextlib.suppress(OSError):
                self.reap(cid)
        if self.cgroups is not None:
            self.cgroups.remove_parent()
        os._exit(0)

    def loop(self) -> None:
        while True:
            for key, _events in self.selector.select():
                if key.data is not None:
                    self.reap(key.data)
                    continue
                try:
                    message, fds = protocol.recv(self.ctrl)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    self.shutdown()
                for fd in fds:
                    os.close(fd)
                if message is None or message.get("op") == "exit":
                    self.shutdown()
                    return
                if message.get("op") == "fork":
                    for _ in range(int(message.get("n", 1))):
                        self.spawn(prefault=bool(message.get("prefault", True)))
                elif message.get("op") == "kill":
                    self.kill(int(message["id"]))
                elif message.get("op") == "stop":
                    self.stop(int(message["id"]))


def _prepare(cfg: ZygoteConfig) -> tuple[jail.JailPlan, CgroupFactory | None, dict[str, Any], KindTable]:
    torch_version, cuda, cuda_devices = _warm_torch(cfg.warm_compile)
    # Every job kind's module is loaded now, before the first fork: a child cannot import after
    # lock-down (NOTE [adding a job kind] in gradtrace/jobs.py).
    table = kinds.table(cfg.kind_files)
    linux.mallopt(linux.M_ARENA_MAX, 2)
    layers: dict[str, str] = {"rlimits": "active", "env": "active: scrubbed zygote env, cleared per job",
                              "fds": "active"}
    seccomp_filter = None
    abi = 0
    cgroups = None
    read_paths: list[str] = []
    root = os.geteuid() == 0
    if cfg.sandbox:
        unmapped = _unmapped_job_uids(cfg.uid_base) if root else None
        root = root and unmapped is None
        layers["uid"] = f"active: uid {cfg.uid_base}+pid" if root else f"off: {unmapped or 'the zygote is not root'}"
        layers["no_new_privs"] = "active"
        try:
            seccomp_filter = _build_seccomp()
            layers["seccomp"] = "active"
        except Exception as exc:
            layers["seccomp"] = f"off: {exc}"
        abi = landlock.abi_version()
        layers["landlock"] = f"active: ABI {abi}" if abi > 0 else "off: kernel has no Landlock"
        cgroups, reason = CgroupFactory.detect(f"gradtrace-{os.getpid()}", cfg.cgroup_parent)
        layers["cgroup"] = ("active: " if cgroups else "off: ") + reason
        read_paths = namespaces.needed_read_paths() + list(jail.SYSTEM_READ_PATHS)
        layers.update(namespaces.enter_zygote_namespaces(cfg.hide_paths))
    else:
        for name in ("uid", "seccomp", "landlock", "cgroup", "netns", "mountns"):
            layers[name] = "off: GRADTRACE_SANDBOX=false"
        layers["no_new_privs"] = "active"
    plan = jail.JailPlan(config=cfg, zygote_pid=os.getpid(),
                         address_space=_vm_size() + (cfg.memory_mb << 20) + ADDRESS_SLACK,
                         read_paths=read_paths, landlock_abi=abi, seccomp_filter=seccomp_filter,
                         layers=layers, drop_uid=cfg.sandbox and root,
                         private_mounts=layers.get("mountns", "").startswith("active"))
    from gradtrace.capture import native as capture_native

    ready = {"type": "ready", "pid": os.getpid(), "layers": layers, "cuda_available": cuda,
             "cuda_devices": cuda_devices if not cfg.cuda else 0, "torch_version": torch_version,
             # NOTE [why C++] in capture/_native.cpp: without the core, capture is 2-4x slower
             "capture_core": ("C++" if capture_native.available()
                              else "Python: the C++ core is not built (make native)")}
    return plan, cgroups, ready, table


def _unmapped_job_uids(uid_base: int) -> str | None:
    """Why per-job uids cannot be had in this user namespace, or None when they can.

    As real root every uid exists; in a user namespace (NOTE [rootless worker] in userns.py)
    only the mapped ones do, and job uids run from ``uid_base`` to ``uid_base + pid_max``.
    """
    try:
        with open("/proc/self/uid_map") as f:
            maps = [tuple(int(v) for v in line.split()) for line in f]
        with open("/proc/sys/kernel/pid_max") as f:
            top = uid_base + int(f.read())
    except (OSError, ValueError):
        return None
    if any(inner <= uid_base and top <= inner + count for inner, _outer, count in maps):
        return None
    return (f"job uids {uid_base}..{top} are not mapped in this user namespace "
            "(grant the worker's user a subordinate range: README, Scaling out)")


def _build_seccomp() -> Any:
    from gradtrace.sandbox.seccomp_filter import build_filter

    return build_filter()


def main(argv: list[str]) -> None:
    ctrl = socket.socket(fileno=int(argv[1]))
    ctrl.setblocking(True)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    message, _fds = protocol.recv(ctrl)
    if message is None:
        return
    cfg = ZygoteConfig.from_message(message)
    try:
        plan, cgroups, ready, table = _prepare(cfg)
    except BaseException as exc:
        protocol.send(ctrl, {"type": "fatal", "message": f"zygote failed to start: {exc!r}"})
        raise
    zygote = Zygote(ctrl, plan, cgroups, table)
    linecache.clearcache()  # warm-up tracebacks cached service source; jobs must not see it
    freeze_before_fork()  # NOTE [gc.freeze before fork] in gradtrace/collector.py
    huge = linux.collapse_heap_to_hugepages()
    ready["hugepages_mib"] = huge >> 20
    protocol.send(ctrl, ready)
    zygote.loop()


if __name__ == "__main__":
    main(sys.argv)
