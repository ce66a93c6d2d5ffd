"""Seccomp benchmark: the allow-list (default EPERM) against the old deny-list (default allow).

Each case forks fresh children from one warm process that imported torch and capture, as the
zygote does; each child loads one filter (none, the old deny-list, the new allow-list) and then
times, in the same run: loading the filter, a trivial snippet through capture (the pool's
trivial-run row without the pipes), and 20,000 cheap syscalls (``os.getppid``, ``os.stat``,
``time.time``) that show the filter's per-syscall cost. NOTE [seccomp allow-list] in
gradtrace/sandbox/seccomp_filter.py says how the list was measured.

The old deny-list is rebuilt here (``OLD_DENIED``, as it was before the allow-list) only to
be the baseline. Usage: ``python bench/bench_seccomp.py [--quick]``.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from typing import Any

from common import Row, print_table

QUICK = "--quick" in sys.argv
SCALE = 5 if QUICK else 1
TRIVIAL = "x = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\n"
OLD_DENIED = (
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve", "execveat", "fork",
    "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp",
    "mount", "umount2", "unshare", "setns", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "bpf", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "userfaultfd", "perf_event_open", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "open_by_handle_at", "name_to_handle_at", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "ioperm", "iopl", "vhangup", "syslog", "lookup_dcookie", "personality", "setdomainname",
    "sethostname",
)


def old_filter() -> Any:
    import pyseccomp as seccomp

    from gradtrace.sandbox.linux import CLONE_THREAD

    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in OLD_DENIED:
        try:
            flt.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            continue
    flt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return flt


def in_child(flt: Any, runs: int) -> dict[str, Any]:
    """Fork; the child loads ``flt`` and reports its timings as JSON through a pipe."""
    from gradtrace.capture import run_snippet

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            t0 = time.perf_counter()
            if flt is not None:
                flt.load()
            load = time.perf_counter() - t0
            run_snippet(TRIVIAL, seed=0)  # pre-fault, as the pool's child does
            trivial = []
            for _ in range(runs):
                t0 = time.perf_counter()
                run_snippet(TRIVIAL, seed=0)
                trivial.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for _ in range(20000 // 3):
                os.getppid()
                os.stat("/")
                time.time()
            syscalls = time.perf_counter() - t0
            os.write(w, json.dumps({"load": load, "trivial": trivial, "syscalls": syscalls}).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return dict(json.loads(data))


def main() -> int:
    import torch  # noqa: F401  (warm, as the zygote is)

    from gradtrace.capture import run_snippet
    from gradtrace.sandbox.seccomp_filter import ALLOWED, build_filter

    run_snippet(TRIVIAL, seed=0)
    t0 = time.perf_counter()
    new = build_filter()
    build_new = time.perf_counter() - t0
    t0 = time.perf_counter()
    old = old_filter()
    build_old = time.perf_counter() - t0
    children = 40 // SCALE
    results: dict[str, list[dict[str, Any]]] = {"none": [], "old": [], "new": []}
    for _ in range(children):  # interleaved, so machine noise hits all three alike
        for name, flt in (("none", None), ("old", old), ("new", new)):
            results[name].append(in_child(flt, 10))
    names = {"none": "no filter", "old": "old deny-list", "new": f"allow-list ({len(ALLOWED)} names)"}
    for title, key in (("loading the filter in a fresh child", "load"),
                       ("20,000 cheap syscalls (getppid, stat, time)", "syscalls")):
        base = [c[key] for c in results["old"]]
        rows = [Row(names[n], [c[key] for c in results[n]], baseline="old deny-list",
                    baseline_median_s=Row("", base).median) for n in ("none", "old", "new")]
        print_table(f"Seccomp: {title}", rows)
    base = [t for c in results["old"] for t in c["trivial"]]
    rows = [Row(names[n] + ": trivial snippet through capture", [t for c in results[n] for t in c["trivial"]],
                baseline="old deny-list", baseline_median_s=Row("", base).median) for n in ("none", "old", "new")]
    print_table("Seccomp: a trivial run in a locked-down child", rows)
    print(f"\nbuilding the filter once in the zygote: old {build_old * 1000:.2f} ms, new {build_new * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
