# ruff: noqa: E501  (the case table keeps each snippet on one readable line)
"""The hostile suite: snippets a malicious or careless user would submit, against the real pool.

Every case asserts the same six things after its own expectation (status and a clear message):
the service is still up (same zygote, ready), no file outside the job's tmpfs changed, nothing
of the service's environment, files or code is in the answer, no connection reached the
loopback listener, no process of the job survived, and the next ordinary run returns a clean,
correct graph (torch is the oracle).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from sandbox.pool_harness import PoolHarness, job_uids, snapshot, survivors, used_children
from security.bait import ORDINARY, Bait

pytestmark = pytest.mark.security

TIMEOUT = ("timeout",)
WALL = "Stopped: the snippet ran longer than 2 s."
CPU = "Stopped: the snippet used more than 1 s of CPU time."
MEMORY = "Stopped: the snippet used more than 384 MiB of memory."
FLOOD = "Stopped: the snippet wrote more than 16 KiB of output."


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    statuses: tuple[str, ...]
    messages: tuple[str, ...] = ()
    """For supervisor statuses: the message must be one of these."""
    error_types: tuple[str, ...] = ()
    """For status error: the snippet's exception type must be one of these."""
    stdout_has: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _syscall(nr: int, *args: int) -> str:
    joined = ", ".join(str(a) for a in args)
    return (f"import ctypes, json\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall({nr}{', ' if args else ''}"
            f"{joined})\nprint(json.dumps([r, ctypes.get_errno()]))\n")


PICKLE = ("import io, os, pickle, torch\nclass Evil:\n    def __reduce__(self):\n"
          "        return (os.system, ('echo pwned > {canary}/pwned',))\n"
          "buf = io.BytesIO()\ntorch.save(Evil(), buf)\nbuf.seek(0)\n")

CASES = [
    # --- CPU
    Case("infinite_loop", "while True:\n    pass\n", TIMEOUT, (CPU, WALL)),
    Case("huge_matmul_in_cpp", "a = torch.randn(2500, 2500)\nwhile True:\n    b = a @ a\n", TIMEOUT, (CPU, WALL)),
    Case("sleep_forever", "import time\ntime.sleep(3600)\n", TIMEOUT, (WALL,)),
    Case("ignore_sigxcpu_and_sigterm", "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n", TIMEOUT, (CPU, WALL)),
    # --- memory
    Case("tensor_bomb", "x = torch.ones(1 << 40)\n", ("memory_limit",), (MEMORY,)),
    # bytes(n) is calloc'd: address space grows at once, no page is touched, so the memory limit
    # meets it in a few steps however loaded the machine (bytearray(n) zero-fills every page: on a
    # busy 2-core machine 384 MiB of page faults outlasted the 2 s wall clock)
    Case("list_bomb", "a = []\nwhile True:\n    a.append(bytes(10 ** 8))\n", ("memory_limit",), (MEMORY,)),
    Case("slow_growth", "import time\na = []\nwhile True:\n    a.append(torch.ones(1 << 20))\n"
         "    time.sleep(0.002)\n", ("memory_limit", "timeout"), (MEMORY, WALL, CPU)),
    Case("tmpfs_fill", "for i in range(64):\n    open(f'/tmp/f{{i}}', 'wb').write(b'x' * (1 << 20))\n",
         ("error",), error_types=("OSError",)),
    # --- processes
    Case("fork_bomb", "import os\nwhile True:\n    os.fork()\n", ("error",), error_types=("PermissionError",)),
    Case("multiprocessing", "import multiprocessing as mp\np = mp.Process(target=print)\np.start()\np.join()\n",
         ("error",), error_types=("PermissionError", "OSError")),
    Case("subprocess", "import subprocess\nsubprocess.run(['id'])\n", ("error",),
         error_types=("PermissionError", "FileNotFoundError")),
    Case("os_system", "import os\nprint(os.system('id > /tmp/id'))\nprint(os.path.exists('/tmp/id'))\n",
         ("ok",), stdout_has="False"),
    Case("posix_spawn", "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'id'], {{}})\n", ("error",),
         error_types=("PermissionError", "OSError")),
    Case("thread_bomb", "import threading, time\nfor _ in range(10000):\n"
         "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n", ("error",),
         error_types=("RuntimeError",)),
    # --- files
    Case("read_etc_passwd", "print(open('/etc/passwd').read())\n", ("error",), error_types=("PermissionError",)),
    Case("read_service_source", "print(open('{source_file}').read())\n", ("error",),
         error_types=("PermissionError", "FileNotFoundError")),
    Case("inspect_service_source", "import inspect, gradtrace.capture\nprint(inspect.getsource(gradtrace.capture))\n",
         ("error",), error_types=("OSError", "PermissionError")),
    Case("read_proc_self_environ", "print(open('/proc/self/environ').read())\n", ("error",),
         error_types=("PermissionError",)),
    Case("read_proc_1_cmdline", "print(open('/proc/1/cmdline').read())\n", ("error",),
         error_types=("FileNotFoundError",)),
    Case("read_test_process_environ", "print(open('/proc/{test_pid}/environ').read())\n", ("error",),
         error_types=("FileNotFoundError",)),
    Case("read_service_data", "print(open('{secret_file}').read())\n", ("error",),
         error_types=("FileNotFoundError", "PermissionError")),
    Case("write_world_writable_dir", "open('{canary}/evil.txt', 'w').write('pwned')\n", ("error",),
         error_types=("OSError", "PermissionError", "FileNotFoundError")),
    Case("overwrite_canary", "open('{canary_file}', 'w').write('pwned')\n", ("error",),
         error_types=("OSError", "PermissionError", "FileNotFoundError")),
    Case("write_repo", "open('{source_file}', 'a').write('# pwned')\n", ("error",),
         error_types=("OSError", "PermissionError", "FileNotFoundError")),
    Case("fill_disk", "open('/tmp/big', 'wb').write(b'x' * (200 << 20))\n", ("error", "memory_limit"),
         (MEMORY,), error_types=("OSError",)),
    Case("exhaust_inodes", "for i in range(100000):\n    open(f'/tmp/i{{i}}', 'w').close()\n", ("error",),
         error_types=("OSError",)),
    Case("symlink_to_shadow", "import os\nos.symlink('/etc/shadow', '/tmp/s')\nprint(open('/tmp/s').read())\n",
         ("error",), error_types=("PermissionError",)),
    Case("chown_root", "import os\nos.chown('/tmp', 0, 0)\n", ("error",), error_types=("PermissionError",)),
    # --- network
    Case("connect_loopback_listener", "import socket\ns = socket.create_connection(('127.0.0.1', {port}), 1)\n",
         ("error",), error_types=("PermissionError",)),
    Case("http_to_loopback", "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/', timeout=1)\n",
         ("error",), error_types=("URLError", "PermissionError")),
    Case("dns_lookup", "import socket\nprint(socket.getaddrinfo('example.com', 80))\n", ("error",),
         error_types=("gaierror",)),
    # --- raw syscalls through ctypes (x86_64 numbers)
    Case("raw_socket_syscall", _syscall(41, 2, 1, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_fork_syscall", _syscall(57), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_execve_syscall", _syscall(59, 0, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_unshare_syscall", _syscall(272, 0x10000000), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_ptrace_parent", "import os, ctypes, json\nlibc = ctypes.CDLL(None, use_errno=True)\n"
         "print(json.dumps([libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno()]))\n", ("ok",),
         stdout_has="[-1, 1]"),
    Case("raw_io_uring_setup", _syscall(425, 8, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_bpf", _syscall(321, 0, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_userfaultfd", _syscall(323, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_keyctl", _syscall(250, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    # --- raw syscalls a deny-list would not name: refused by the allow-list's default (EPERM)
    Case("raw_sysv_shmget", _syscall(29, 0, 4096, 0o1600), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_sysv_msgget", _syscall(68, 0, 0o1600), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_posix_mq_open", _syscall(240, 0, 0o100, 0o600, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_mknod", _syscall(133, 0, 0o10600, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_inotify_init1", _syscall(294, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_sysfs", _syscall(139, 3), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_setresuid_noop", _syscall(117, -1, -1, -1), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_capset", _syscall(126, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_pidfd_open", _syscall(434, 1, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_seccomp", _syscall(317, 2, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_landlock_create_ruleset", _syscall(444, 0, 0, 1), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_migrate_pages", _syscall(256, 0, 0, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_modify_ldt", _syscall(154, 0, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_memfd_secret", _syscall(447, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_process_mrelease", _syscall(448, -1, 0), ("ok",), stdout_has="[-1, 1]"),
    Case("raw_vmsplice", _syscall(278, -1, 0, 0, 0), ("ok",), stdout_has="[-1, 1]"),
    # --- signals
    Case("kill_parent", "import os\nos.kill(os.getppid(), 9)\n", ("error",), error_types=("PermissionError",)),
    Case("kill_pid_1", "import os\nos.kill(1, 9)\n", ("error",), error_types=("PermissionError", "ProcessLookupError")),
    Case("kill_everything", "import os\nos.kill(-1, 9)\nprint('still here')\n", ("ok", "error")),
    # --- exits
    Case("sys_exit", "import sys\nsys.exit(3)\n", ("error",), error_types=("SystemExit",)),
    Case("os_exit", "import os\nos._exit(0)\n", ("crashed",), ("The snippet's process exited with code 0 "
         "before it finished (sys.exit/os._exit ends the run without a result).",)),
    Case("os_abort", "import os\nos.abort()\n", ("crashed",),
         ("The snippet's process was killed by SIGABRT before it finished.",)),
    Case("keyboard_interrupt", "raise KeyboardInterrupt\n", ("error",), error_types=("KeyboardInterrupt",)),
    Case("custom_base_exception", "class Evil(BaseException):\n    pass\nraise Evil('boom')\n", ("error",),
         error_types=("Evil",)),
    # --- output
    Case("stdout_flood", "while True:\n    print('x' * 1000)\n", ("output_limit",)),
    Case("stderr_flood", "import sys\nwhile True:\n    sys.stderr.write('y' * 1000)\n", ("output_limit",)),
    Case("raw_fd_flood", "import os\nwhile True:\n    os.write(1, b'z' * 65536)\n", ("output_limit",), (FLOOD,)),
    Case("raw_stderr_fd_flood", "import os\nwhile True:\n    os.write(2, b'z' * 65536)\n", ("output_limit",),
         (FLOOD,)),
    # --- recursion and printing
    Case("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)\n", ("error",), error_types=("RecursionError",)),
    Case("deep_recursion_raised_limit", "import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1)\n"
         "f(0)\n", ("crashed", "error", "memory_limit", "timeout")),
    Case("print_giant_tensor", "print(torch.zeros(10 ** 7))\n", ("ok",), stdout_has="..."),
    # --- pickles
    Case("torch_load_evil_pickle", PICKLE + "torch.load(buf)\n", ("error",), error_types=("UnpicklingError",)),
    Case("torch_load_evil_pickle_unsafe", PICKLE + "print(torch.load(buf, weights_only=False))\n", ("ok",)),
    # --- monkeypatching
    Case("patch_json", "import json\njson.dumps = lambda *a, **k: 'evil'\njson.JSONEncoder.iterencode = "
         "lambda self, o, _one_shot=False: iter(['{{\"status\": \"ok\"'])\n", ("ok", "crashed")),
    Case("patch_capture", "import gradtrace.capture.snippet as s\ns._finish = lambda *a, **k: "
         "{{'id': 'x', 'status': 'ok', 'stdout': 'forged', 'graph': {{'nodes': [{{'bogus': 1}}]}}}}\n",
         ("ok", "crashed", "error")),
    Case("patch_os_exit", "import os\nos._exit = lambda code: None\nos.close = lambda fd: None\n", ("ok",)),
    Case("patch_child_exit", "import gradtrace.sandbox.child as c\nc._exit = lambda code: None\n"
         "c._close = lambda fd: None\n", ("ok", "crashed", "timeout")),
    Case("hijack_line_tracer", "import sys\nt = sys.gettrace()\nsys.settrace(lambda *a: None)\n"
         "x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nsys.settrace(None)\n"
         "print(type(t).__name__, x.grad.tolist())\n", ("ok",), stdout_has="str [2.0, 2.0]"),
    # --- evil objects
    Case("evil_repr", "class A:\n    def __repr__(self):\n        raise SystemExit(1)\nprint(A())\n", ("error",),
         error_types=("SystemExit",)),
    Case("evil_repr_loops", "class A:\n    def __repr__(self):\n        while True:\n            pass\na = A()\n"
         "print(repr(a))\n", TIMEOUT, (CPU, WALL)),
    Case("evil_del", "class D:\n    def __del__(self):\n        import os\n        os._exit(9)\nd = D()\n",
         ("crashed", "ok")),
    # --- threads
    Case("thread_outlives_job", "import threading, time, os\ndef late():\n    time.sleep(0.3)\n"
         "    os.write(1, b'late')\nthreading.Thread(target=late).start()\n", ("ok",)),
    Case("thread_writes_result_pipe", "import threading, os\ndef spam():\n    while True:\n"
         "        os.write(3, b'garbage')\nthreading.Thread(target=spam, daemon=True).start()\n"
         "import time\ntime.sleep(0.05)\n", ("crashed", "ok", "output_limit")),
    # A result frame forged by hand (NOTE [answer frames] in sandbox/wire.py): taken as the run's
    # answer, its code and id overwritten; bytes that are not a frame are no answer at all.
    Case("forged_result", "import os, json, struct\ndoc = json.dumps({{'id': 'forged', 'status': 'ok', "
         "'stdout': 'forged', 'code': 'other'}}).encode()\n"
         "os.write(3, b'GTF1' + struct.pack('<Iqq', 2, len(doc), -1) + doc)\nos.close(3)\n"
         "import time\ntime.sleep(5)\n", ("ok",)),
    Case("unframed_result", "import os, json\nos.write(3, json.dumps({{'id': 'forged', 'status': 'ok', "
         "'stdout': 'forged', 'code': 'other'}}).encode())\n", ("crashed",),
         ("The snippet's process returned an invalid result.",)),
    # --- source oddities
    Case("syntax_error", "def broken(:\n    pass\n", ("error",), error_types=("SyntaxError",)),
    Case("nul_bytes", "x = 1\0\n", ("error",), error_types=("SyntaxError", "ValueError")),
    Case("unicode_tricks", "ｐｒｉｎｔ('fullwidth')\nprint('a\\u202eb', 'ﬁ', '\\u200b')\n", ("ok",),
         stdout_has="fullwidth"),
    Case("lone_surrogate", "print('a\\ud800b')\n", ("ok",), stdout_has="a?b"),
    # --- graph explosion
    Case("graph_explosion", "x = torch.ones(1, requires_grad=True)\nfor i in range(10 ** 7):\n    x = x * 1.0\n",
         ("graph_limit",)),
]


def _check_expectation(case: Case, doc: dict[str, Any]) -> None:
    assert doc["status"] in case.statuses, (case.id, doc["status"], doc.get("message"), doc.get("error"))
    if case.messages and doc["status"] in ("timeout", "memory_limit", "crashed", "output_limit") and \
            doc["status"] != "ok":
        assert doc["message"].startswith(case.messages), (case.id, doc["message"])
    if doc["status"] == "error":
        assert doc["error"] and doc["error"]["message"] is not None
        if case.error_types:
            assert doc["error"]["type"] in case.error_types, (case.id, doc["error"])
    if doc["status"] in ("timeout", "memory_limit", "crashed", "output_limit", "graph_limit"):
        assert doc["message"], (case.id, "a limit hit must say what happened")
    if doc["status"] in ("timeout", "memory_limit") and not doc["graph"]["nodes"] and not doc.get("error"):
        # nothing was kept (no graph, no line it was stopped on): the message says why
        assert "could be kept" in doc["message"], (case.id, doc["message"])
    if case.stdout_has is not None:
        assert case.stdout_has in doc["stdout"], (case.id, doc["stdout"][:500])


def _params() -> list[Any]:
    return [pytest.param(c, id=c.id) for c in CASES]


@pytest.mark.parametrize("case", _params())
def test_hostile_snippet_is_contained(case: Case, hostile_pool: PoolHarness, bait: Bait,
                                     watched: dict[str, Any], ordinary_grad: list[float]) -> None:
    code = case.code.format(**bait.values())
    doc = hostile_pool.run(code)
    _check_expectation(case, doc)
    # Nothing of the service leaked: not in the output, not anywhere in the document.
    assert bait.leaks(json.dumps(doc, ensure_ascii=False)) == [], case.id
    # No connection reached the loopback listener.
    assert bait.listener.connections == watched["connections"], case.id
    # No file outside the job's tmpfs changed.
    assert snapshot([bait.canary_dir, bait.data_dir]) == watched["files"], case.id
    assert bait.canary_file.read_text() == "untouched\n"
    # No process of the job survived.
    used = used_children(watched["zygote"], watched["idle"])
    assert used, "the job's child was not reaped"
    assert survivors(job_uids(used)) == [], case.id
    # The service is still up: same zygote, ready.
    state = hostile_pool.pool.state()
    assert state.ready and state.detail["zygote_pid"] == watched["zygote"]
    os.kill(watched["zygote"], 0)
    # The next ordinary run returns a clean, correct graph.
    after = hostile_pool.run(ORDINARY)
    assert after["status"] == "ok" and after["error"] is None and after["stdout"] == ""
    leaves = [n for n in after["graph"]["nodes"] if n["kind"] == "tensor" and n["name"] == "x"]
    assert [leaf["grad"]["values"] for leaf in leaves] == [ordinary_grad]


def test_suite_covers_at_least_forty_snippets() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
