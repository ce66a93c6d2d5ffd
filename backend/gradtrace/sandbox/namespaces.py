"""The zygote's own namespaces: an empty network, a private mount view, hidden service data.

Done once in the zygote (after torch is imported, before any child is forked), so per-job
children inherit the empty network namespace for free (``unshare(CLONE_NEWNET)`` per job costs
about 1 ms, inheriting costs nothing).

NOTE [interpreter under a 0700 directory]
    On this machine Python lives in ``/root/.pyenv`` and ``/root`` is 0700, so a per-job uid
    cannot import the standard library. In the zygote's mount namespace every needed path that
    sits below a directory the world cannot traverse is re-exposed: an empty 0755 tmpfs is put
    over the first such ancestor (which also hides everything else in it) and the needed
    directories are bind-mounted back, read-only, from O_PATH fds opened before the tmpfs hid
    them. When Python lives under ``/opt`` (the Docker image) nothing needs doing.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from gradtrace.sandbox import linux


def needed_read_paths() -> list[str]:
    """Directories a job must read: the interpreter, the venv, sys.path, shared libraries."""
    candidates = [sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)),
                  *[p for p in sys.path if p]]
    seen: list[str] = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in seen:
            seen.append(real)
    return seen


def _first_closed_ancestor(path: str) -> str | None:
    """The highest ancestor of ``path`` that others cannot traverse, or None."""
    parts = Path(path).parts
    for i in range(2, len(parts) + 1):
        ancestor = str(Path(*parts[:i]))
        try:
            mode = os.stat(ancestor).st_mode
        except OSError:
            return None
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return ancestor
    return None


def expose_paths(paths: list[str]) -> list[str]:
    """Make ``paths`` reachable by other uids (see NOTE above); returns what was re-exposed."""
    by_ancestor: dict[str, list[str]] = {}
    for path in paths:
        ancestor = _first_closed_ancestor(path)
        if ancestor is not None:
            by_ancestor.setdefault(ancestor, []).append(path)
    exposed: list[str] = []
    for ancestor, inner in by_ancestor.items():
        # Keep only the outermost needed dirs; the inner ones come along with their parent.
        inner = sorted(set(inner))
        tops = [p for p in inner if not any(p != q and p.startswith(q + "/") for q in inner)]
        fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in tops}
        try:
            linux.mount("tmpfs", ancestor, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=64k")
            for path, fd in fds.items():
                os.makedirs(path, mode=0o755, exist_ok=True)
                linux.mount(f"/proc/self/fd/{fd}", path, None, linux.MS_BIND | linux.MS_REC)
                exposed.append(path)
            linux.mount("none", ancestor, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY
                        | linux.MS_NOSUID | linux.MS_NODEV)
        finally:
            for fd in fds.values():
                os.close(fd)
    return exposed


def hide_paths(paths: list[str]) -> list[str]:
    """Cover each existing directory with an empty read-only tmpfs; returns what was hidden."""
    hidden = []
    needed = needed_read_paths()
    for path in paths:
        path = os.path.realpath(path)
        if any(n == path or n.startswith(path.rstrip("/") + "/") for n in needed):
            continue  # hiding it would hide the interpreter too (e.g. GRADTRACE_DATA_DIR=/)
        if os.path.isdir(path):
            linux.mount("tmpfs", path, "tmpfs", linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
                        | linux.MS_NOEXEC, "mode=0555,size=4k")
            hidden.append(path)
    return hidden


def enter_zygote_namespaces(hide: list[str]) -> dict[str, str]:
    """Move the zygote into new mount/net/ipc/uts namespaces; returns each layer's state."""
    layers: dict[str, str] = {}
    try:
        linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS)
        layers["netns"] = "active: empty network namespace (loopback down)"
        layers["ipcns"] = "active"
    except OSError as exc:
        layers["netns"] = layers["mountns"] = f"off: {exc}"
        return layers
    try:
        linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
        exposed = expose_paths(needed_read_paths())
        hidden = hide_paths(hide)
        layers["mountns"] = f"active: exposed {exposed or 'nothing'}, hid {hidden or 'nothing'}"
    except OSError as exc:
        layers["mountns"] = f"off: {exc}"
    return layers
