"""The control channel between the web process and the zygote.

One ``AF_UNIX``/``SOCK_SEQPACKET`` socket pair: every message is one datagram-like packet of
UTF-8 JSON (so no framing code), optionally carrying file descriptors (``SCM_RIGHTS``). The
zygote hands the web process the three pipe ends of each pre-forked child this way, so the web
process talks to the job directly and the zygote never touches user bytes.

Messages, zygote → web:
    ``{"type": "ready", "pid", "layers", "cuda_available", "torch_version"}``
    ``{"type": "child", "id", "pid", "uid"}`` with fds ``[job_w, out_r, res_r]``
    ``{"type": "exit", "id", "pid", "code", "signal", "cpu_s", "maxrss_kb", "oom"}``
    ``{"type": "fatal", "message"}`` (the zygote cannot go on; it exits after sending)
Messages, web → zygote:
    ``{"op": "configure", ...ZygoteConfig}`` (first message), ``{"op": "fork", "n"}``,
    ``{"op": "kill", "id"}``, ``{"op": "stop", "id"}`` (``WALL_STOP_SIGNAL``: hand in what you have),
    ``{"op": "exit"}``

Only this file and the pool see the web side; nothing here imports torch. The names the job
child, the zygote and the supervisor must agree on (exit codes, signals, the snippet's file
name) are written here, once.
"""

from __future__ import annotations

import array
import contextlib
import json
import signal
import socket
from typing import Any

TIME_LIMIT_ERROR = "TimeLimitExceeded"
"""The error type a job reports when it was stopped at a time limit (NOTE [stop, then kill])."""
WALL_STOP_SIGNAL = signal.SIGUSR2
"""What the supervisor sends a job at its wall-clock deadline. Not SIGXCPU, which the kernel
sends at the CPU limit: the job must tell the two apart, and its own clock cannot (the kernel's
tick-sampled CPU time runs ahead of ``time.process_time()`` on a busy machine)."""
SNIPPET_FILENAME = "<snippet>"
"""The file name user code is compiled with (NOTE [stop, then kill] in ``sandbox/child.py``)."""

EXIT_OK = 0
EXIT_BAD_JOB = 65
"""The job pipe did not hold a job of a kind the child knows."""
EXIT_INTERNAL = 70
EXIT_NO_MEMORY = 71
EXIT_SETUP_FAILED = 72
"""The zygote could not lock the child down (``zygote.py``)."""
EXIT_STOP_IGNORED_WALL = 73
"""The snippet caught the stop at its wall-clock limit (NOTE [stop, then kill])."""
EXIT_STOP_IGNORED_CPU = 74
"""... at its CPU limit."""
EXIT_CPU_LIMIT = 75
"""``TimeLimitExceeded`` at the CPU limit escaped a kind's handler (the run kind records it in
its document instead)."""
EXIT_WALL_LIMIT = 76
"""... at the wall-clock limit."""

MAX_MESSAGE = 1 << 16
MAX_FDS = 8


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
    """Send one JSON message, with ``fds`` attached when given."""
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise ValueError(f"control message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    if fds:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        sock.sendmsg([data], ancillary)
    else:
        sock.sendmsg([data])


def recv(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one message; ``(None, [])`` at end of stream. Raises BlockingIOError if none waits."""
    fd_size = array.array("i").itemsize * MAX_FDS
    data, ancdata, _flags, _addr = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(fd_size),
                                                getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    fds: list[int] = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            arr = array.array("i")
            arr.frombytes(payload[: len(payload) - (len(payload) % arr.itemsize)])
            fds.extend(arr)
    if not data:
        for fd in fds:
            _close_quietly(fd)
        return None, []
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("control message is not a JSON object")
    return message, fds


def _close_quietly(fd: int) -> None:
    import os

    with contextlib.suppress(OSError):
        os.close(fd)
