"""The job's seccomp filter: an allow-list; everything else fails with EPERM.

Built once in the zygote (building the allow-list costs about 16 ms there, once; loading it in a
child about 0.7 ms, against 0.3 ms for the old deny-list: ``bench/bench_seccomp.py``) and
loaded by each job child as its last lock-down step, after ``no_new_privs``.

NOTE [seccomp allow-list]
    The default action is ``ERRNO(EPERM)``, never a kill: a snippet that tries ``subprocess``,
    a socket or a raw ``ctypes`` syscall gets a Python exception it can read (``PermissionError``),
    and the run still returns its document. Only the syscalls in :data:`ALLOWED` pass, each group
    with the reason a job needs it. The list was measured, not guessed: ``strace -f -ff`` over a
    real pool (``tests/sandbox/syscall_trace.py``) running every lesson, the real programs of
    ``tests/programs.py``, lesson 15 with torch.compile warmed, a gradient check and the whole
    hostile suite, counting what each job child and its threads called after the filter loaded
    (the pre-fault run, the snippet, the result write and ``_exit`` all happen then).
    ``tests/sandbox/test_seccomp_allowlist.py`` repeats the measurement and fails when a job
    needs a syscall missing here. Some harmless calls that the measurement did not hit are
    allowed anyway, because a job that breaks on a rare path (a tempfile, ``shutil.copy``, a
    timer, an OpenMP thread pinning itself) is worse than the call: they are marked "not measured".

    CUDA: a CUDA job's driver talks to the GPU through ``ioctl`` and ``mmap`` on the device files
    (both allowed for every job: the jail's mounts and Landlock decide which files can be opened)
    and uses threads, eventfds, pipes and polling, all allowed below. The CUDA path was not
    measured on a GPU in this repo's tests; the groups marked "CUDA" are there for it.

    Still refused, as the deny-list before did by name (and now by default): sockets, exec,
    new processes (``clone`` without ``CLONE_THREAD``, ``fork``, ``vfork``; ``clone3`` answers
    ENOSYS so glibc falls back to ``clone`` for threads), ``ptrace`` and other processes' memory,
    namespaces and mounts, ``bpf``, ``io_uring``, keys, ``userfaultfd``, ``perf_event_open``,
    modules, ``kexec``, clocks, handles, ``personality``; and now also everything the old list
    did not name: SysV and POSIX message queues and shared memory, ``fanotify``/``inotify``,
    ``mknod``, ``chown``, ``setuid``-family and capability changes, ``pidfd_*``, NUMA page
    migration, ``memfd_secret``, ``landlock_*``, ``seccomp`` itself, ``mseal``, ``modify_ldt``...
"""

from __future__ import annotations

import errno
from typing import Any

from gradtrace.sandbox.linux import CLONE_THREAD

ALLOWED_GROUPS: dict[str, tuple[str, ...]] = {
    # The heap, torch's allocator, mapped libraries and the pre-fault run; mlock is bounded by
    # RLIMIT_MEMLOCK; membarrier/get_mempolicy/mbind are what OpenMP and CUDA runtimes ask (not
    # measured on this CPU build, harmless: they touch only this process's memory).
    "memory": ("brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "mlock",
               "mlock2", "munlock", "mlockall", "munlockall", "membarrier", "get_mempolicy", "mbind",
               "set_mempolicy", "memfd_create"),
    # Reading and writing fds the job holds (its pipes, the result fd, files it opened).
    "fds": ("read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
            "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "ioctl", "pipe",
            "pipe2", "sendfile", "copy_file_range", "splice", "tee", "flock", "fsync", "fdatasync",
            "ftruncate", "fallocate", "fadvise64", "readahead"),
    # Paths: Landlock and the private mounts decide which files exist and may be written (the
    # tmpfs only); the syscalls themselves are needed by imports, tempfile, torch.save, shutil.
    "paths": ("open", "openat", "openat2", "stat", "lstat", "fstat", "newfstatat", "statx", "statfs",
              "fstatfs", "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents",
              "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
              "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod",
              "fchmodat", "fchmodat2", "umask", "utime", "utimes", "utimensat", "futimesat", "truncate",
              "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
              "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr"),
    # Waiting on fds: selectors, asyncio's loop, CUDA's event threads.
    "polling": ("poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
                "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "timerfd_create",
                "timerfd_settime", "timerfd_gettime", "signalfd", "signalfd4"),
    # Time: clocks, sleeps, timers (the job's own; setting the clock stays refused).
    "time": ("clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
             "times", "getitimer", "setitimer", "alarm", "timer_create", "timer_settime", "timer_gettime",
             "timer_getoverrun", "timer_delete"),
    # Signals: the stop handlers (NOTE [stop, then kill] in child.py), abort(), os.kill; the pid
    # namespace and the job uid keep kill() inside the job.
    "signals": ("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
                "rt_sigsuspend", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "pause", "kill",
                "tgkill", "tkill", "restart_syscall"),
    # Threads: OpenMP and torch's intra-op pool, Python threads (clone itself is a rule below).
    "threads": ("futex", "futex_waitv", "set_robust_list", "get_robust_list", "set_tid_address", "rseq",
                "gettid", "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
                "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min",
                "sched_rr_get_interval", "sched_getattr", "arch_prctl", "prctl", "getpriority",
                "setpriority", "ioprio_get"),
    # This process's identity and limits: os.getpid, platform, the child's own rlimit tightening
    # after lock-down (child.py _tighten_limits; raising a hard limit needs a capability the job
    # lacks), getrandom for hashing and torch's seeds.
    "process": ("getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid",
                "getresgid", "getpgrp", "getpgid", "getsid", "uname", "sysinfo", "getrusage", "getrlimit",
                "setrlimit", "prlimit64", "getrandom", "capget", "getcpu", "wait4", "waitid"),
    # Ending: the child leaves with os._exit; a thread with exit.
    "exit": ("exit", "exit_group"),
}

ALLOWED: tuple[str, ...] = tuple(name for group in ALLOWED_GROUPS.values() for name in group)

REFUSED_EXAMPLES: tuple[str, ...] = (
    # The families the old deny-list named, kept here so tests can ask the built filter that they
    # are still refused: network, programs, other processes, namespaces, kernel surface.
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve", "execveat",
    "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise",
    "kcmp", "mount", "umount2", "unshare", "setns", "pivot_root", "chroot", "bpf", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "userfaultfd",
    "perf_event_open", "kexec_load", "init_module", "finit_module", "reboot", "personality",
    "name_to_handle_at", "open_by_handle_at", "settimeofday", "clock_settime", "iopl", "ioperm",
)


def build_filter() -> Any:
    """Build (not load) the filter; returns a ``pyseccomp.SyscallFilter``."""
    import pyseccomp as seccomp  # imported here: libseccomp is only needed where jobs run

    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    for name in ALLOWED:
        try:
            flt.add_rule(seccomp.ALLOW, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a syscall on this architecture (open/stat on aarch64, say)
    # Threads only: clone() without CLONE_THREAD makes a process and stays refused (EPERM).
    flt.add_rule(seccomp.ALLOW, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, CLONE_THREAD))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return flt
