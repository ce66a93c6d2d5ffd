"""Thin ctypes wrappers for the Linux calls Python 3.11 lacks (unshare, mount, prctl, ...).

Python 3.11 has no ``os.unshare`` or ``os.setns`` and never had ``mount``; libc's wrappers are
reachable through ctypes, and ``syscall(2)`` covers the newer calls glibc may not export
(``mount_setattr``, Landlock). Every wrapper raises :class:`OSError` with the real errno, so a
layer that fails says why, and the caller can degrade with that reason recorded.

This module imports nothing heavy: the zygote uses it before and after importing torch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

# Namespaces (linux/sched.h).
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000

# mount(2) flags (linux/mount.h).
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

# mount_setattr(2).
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4

# prctl(2).
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39

# mallopt(3).
M_ARENA_MAX = -8

_SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {"open_tree": 428, "move_mount": 429, "mount_setattr": 442, "landlock_create_ruleset": 444,
               "landlock_add_rule": 445, "landlock_restrict_self": 446},
    "aarch64": {"open_tree": 428, "move_mount": 429, "mount_setattr": 442, "landlock_create_ruleset": 444,
                "landlock_add_rule": 445, "landlock_restrict_self": 446},
}


def syscall_number(name: str) -> int:
    """The number of a syscall that glibc may not wrap, on this machine's architecture."""
    table = _SYSCALLS.get(platform.machine())
    if table is None:
        raise OSError(f"unsupported architecture {platform.machine()!r} for syscall {name}")
    return table[name]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def unshare(flags: int) -> None:
    """``unshare(2)``: move this process into new namespaces."""
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """``mount(2)``."""
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def make_tree_readonly(path: str = "/") -> None:
    """Make every mount at and below ``path`` read-only, nosuid and nodev in this mount namespace.

    NOTE [recursive read-only]
        ``mount(MS_REMOUNT|MS_BIND|MS_RDONLY|MS_REC)`` only changes the top mount on many kernels;
        ``mount_setattr(AT_RECURSIVE)`` (Linux 5.12) changes the whole tree in one call.
    """
    attr = _MountAttr(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    res = _libc.syscall(ctypes.c_long(syscall_number("mount_setattr")), ctypes.c_int(-100),
                        path.encode(), ctypes.c_uint(AT_RECURSIVE), ctypes.byref(attr),
                        ctypes.c_size_t(ctypes.sizeof(attr)))
    _check(res, f"mount_setattr {path}")


OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 0x4
AT_EMPTY_PATH = 0x1000


def clone_tree(path: str) -> int:
    """``open_tree(OPEN_TREE_CLONE|AT_RECURSIVE)``: a detached copy of the mounts at ``path``.

    It keeps a directory reachable after something is mounted over one of its ancestors (the
    per-job tmpfs on ``/tmp`` over an install that lives under ``/tmp``); :func:`attach_tree`
    puts it back.
    """
    return _check(_libc.syscall(ctypes.c_long(syscall_number("open_tree")), ctypes.c_int(-100),
                                path.encode(), ctypes.c_uint(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)),
                  f"open_tree {path}")


def attach_tree(tree_fd: int, target: str) -> None:
    """``move_mount``: attach a tree from :func:`clone_tree` at ``target`` (an existing directory)."""
    _check(_libc.syscall(ctypes.c_long(syscall_number("move_mount")), ctypes.c_int(tree_fd), b"",
                         ctypes.c_int(-100), target.encode(), ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)),
           f"move_mount {target}")


def prctl(option: int, arg2: int = 0) -> int:
    """``prctl(2)`` with one argument."""
    return _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(0),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl {option}")


def mallopt(param: int, value: int) -> None:
    """``mallopt(3)``; used to cap glibc's per-thread arenas (each reserves 64 MiB of address space)."""
    _libc.mallopt(ctypes.c_int(param), ctypes.c_int(value))


def raw_syscall(number: int, *args: object) -> int:
    """``syscall(2)`` that raises OSError on failure; arguments are passed as C longs or pointers."""
    converted: list[object] = []
    for arg in args:
        converted.append(ctypes.c_long(arg) if isinstance(arg, int) else arg)
    return _check(_libc.syscall(ctypes.c_long(number), *converted), f"syscall {number}")


MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25  # Linux 6.1
_HUGE = 2 << 20


def collapse_heap_to_hugepages() -> int:
    """Back the big private anonymous mappings (heap, mmap arenas) with 2 MiB pages.

    NOTE [huge pages before fork]
        The zygote holds ~140 MB of anonymous memory after importing torch. ``fork`` copies one
        page-table entry (and bumps one map count) per 4 KiB page of it, which took 4-12 ms per
        job here; with the same memory in transparent huge pages it copies one entry per 2 MiB
        (about 1.5 ms). A child's copy-on-write fault still copies only 4 KiB. Returns the bytes
        collapsed; 0 where the kernel has no MADV_COLLAPSE (the pool then just forks slower).
    """
    madvise = _libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    with open("/proc/self/maps") as maps:
        lines = maps.read().splitlines()
    for line in lines:
        parts = line.split()
        path = parts[5] if len(parts) > 5 else ""
        if not parts[1].startswith("rw") or path not in ("", "[heap]"):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        start = (start + _HUGE - 1) // _HUGE * _HUGE
        end = end // _HUGE * _HUGE
        if end - start < _HUGE:
            continue
        madvise(start, end - start, MADV_HUGEPAGE)
        if madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed
