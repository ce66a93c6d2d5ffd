"""The job's seccomp filter: no sockets, no exec, no new processes, no kernel attack surface.

Built once in the zygote (building costs about 1.5 ms, loading a built filter about 0.5 ms) and
loaded by each job child as its last lock-down step, after ``no_new_privs``.

NOTE [seccomp deny-list]
    This is a deny-list on top of an allow-all default, because torch and CPython touch a wide
    and version-dependent set of syscalls. It blocks what a snippet needs to escape or to reach
    other processes; the uid, the namespaces and Landlock cover the rest. Denied calls fail with
    EPERM (ENOSYS for ``clone3``, so glibc falls back to ``clone`` for threads), never by killing
    the process: a snippet that tries ``subprocess`` gets a Python exception it can read.
"""

from __future__ import annotations

import errno
from typing import Any

from gradtrace.sandbox.linux import CLONE_THREAD

DENIED_SYSCALLS: tuple[str, ...] = (
    # network
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # programs and processes
    "execve", "execveat", "fork", "vfork",
    # other processes' memory and state
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp",
    # namespaces and mounts
    "mount", "umount2", "unshare", "setns", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    # kernel attack surface
    "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "userfaultfd", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "open_by_handle_at",
    "name_to_handle_at", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "ioperm", "iopl",
    "vhangup", "syslog", "lookup_dcookie", "personality", "setdomainname", "sethostname",
)


def build_filter() -> Any:
    """Build (not load) the filter; returns a ``pyseccomp.SyscallFilter``."""
    import pyseccomp as seccomp  # imported here: libseccomp is only needed where jobs run

    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    deny = seccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            flt.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture
    # Threads only: clone() without CLONE_THREAD makes a process.
    flt.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return flt
