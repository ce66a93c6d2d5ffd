"""Landlock: an unprivileged, kernel-enforced allow-list for files, TCP and IPC scopes.

The job may read the interpreter, the libraries and its own ``/proc``; it may write only its
per-job tmpfs; it may not bind or connect TCP sockets, talk to abstract unix sockets outside
its domain or signal processes outside it. Everything else the kernel denies with EACCES, even
to ctypes.

NOTE [Landlock O_PATH fds]
    Rules name directories by open file descriptors. They are opened while the child is still
    root (before the uid drop), because the per-job uid cannot traverse some of the paths
    (``/root`` is 0700); rules added after the drop silently lose those paths (the kernel
    cannot open them for the rule). The fds are closed right after ``restrict_self``.
"""

from __future__ import annotations

import ctypes
import os
import stat

from gradtrace.sandbox import linux

CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

ACCESS_EXECUTE = 1 << 0
ACCESS_WRITE_FILE = 1 << 1
ACCESS_READ_FILE = 1 << 2
ACCESS_READ_DIR = 1 << 3
ACCESS_REMOVE_DIR = 1 << 4
ACCESS_REMOVE_FILE = 1 << 5
ACCESS_MAKE_CHAR = 1 << 6
ACCESS_MAKE_DIR = 1 << 7
ACCESS_MAKE_REG = 1 << 8
ACCESS_MAKE_SOCK = 1 << 9
ACCESS_MAKE_FIFO = 1 << 10
ACCESS_MAKE_BLOCK = 1 << 11
ACCESS_MAKE_SYM = 1 << 12
ACCESS_REFER = 1 << 13  # ABI 2
ACCESS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FILE_RIGHTS = ACCESS_EXECUTE | ACCESS_WRITE_FILE | ACCESS_READ_FILE | ACCESS_TRUNCATE | ACCESS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The Landlock ABI the kernel offers, or 0 when it has none (or it is disabled)."""
    try:
        return linux.raw_syscall(linux.syscall_number("landlock_create_ruleset"), ctypes.c_void_p(0), 0,
                                 CREATE_RULESET_VERSION)
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= ACCESS_REFER
    if abi >= 3:
        rights |= ACCESS_TRUNCATE
    if abi >= 5:
        rights |= ACCESS_IOCTL_DEV
    return rights


class Ruleset:
    """A Landlock ruleset being built; :meth:`restrict_self` enforces it on the calling thread.

    Build it as root (so every path can be opened), drop privileges, set ``no_new_privs``, then
    call :meth:`restrict_self` before any user byte is read.
    """

    def __init__(self, abi: int) -> None:
        self.abi = abi
        self.fs_rights = _fs_rights(abi)
        attr = _RulesetAttr(self.fs_rights, (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
                            (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
        size = ctypes.sizeof(attr) if abi >= 6 else 16 if abi >= 4 else 8
        self.fd = linux.raw_syscall(linux.syscall_number("landlock_create_ruleset"), ctypes.byref(attr),
                                    size, 0)

    def allow(self, path: str, *, write: bool = False) -> bool:
        """Allow reading (and with ``write``, everything else but exec) beneath ``path``.

        Returns False when the path does not exist, so optional library dirs can be listed freely.
        """
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            access = ACCESS_READ_FILE | (ACCESS_READ_DIR if is_dir else 0)
            if write:
                access = self.fs_rights & ~ACCESS_EXECUTE
            if not is_dir:
                access &= _FILE_RIGHTS
            access &= self.fs_rights
            rule = _PathBeneathAttr(access, fd)
            linux.raw_syscall(linux.syscall_number("landlock_add_rule"), self.fd, RULE_PATH_BENEATH,
                              ctypes.byref(rule), 0)
        finally:
            os.close(fd)
        return True

    def restrict_self(self) -> None:
        """Enforce the ruleset; needs ``no_new_privs`` (or CAP_SYS_ADMIN) first."""
        try:
            linux.raw_syscall(linux.syscall_number("landlock_restrict_self"), self.fd, 0)
        finally:
            os.close(self.fd)
