"""Each isolation layer, observed from inside a real job (skipped, with the pool's reason, if off)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from gradtrace.sandbox.config import UID_BASE
from sandbox.pool_harness import PoolHarness


def layer(pool: PoolHarness, name: str) -> str:
    state: str = pool.pool.state().detail["layers"][name]
    if not state.startswith("active"):
        pytest.skip(f"layer {name} is not available here: {state}")
    return state


def probe(pool: PoolHarness, code: str) -> Any:
    """Run ``code`` that prints one JSON value as its last line; return that value."""
    doc = pool.run(code)
    assert doc["status"] == "ok", doc
    return json.loads(doc["stdout"].strip().splitlines()[-1])


def test_only_stdio_and_result_fds_are_open(pool: PoolHarness) -> None:
    layer(pool, "fds")
    code = ("import os, json\nopen_fds = []\nfor fd in range(1024):\n    try:\n        os.fstat(fd)\n"
            "        open_fds.append(fd)\n    except OSError:\n        pass\nprint(json.dumps(open_fds))")
    assert probe(pool, code) == [0, 1, 2, 3]


def test_environment_is_cleared_and_holds_no_secret(pool: PoolHarness) -> None:
    layer(pool, "env")
    code = ("import os, json\ntry:\n    initial = open('/proc/self/environ', 'rb').read().decode('latin-1')\n"
            "except PermissionError:\n    initial = 'denied'\nprint(json.dumps([dict(os.environ), initial]))")
    env, initial = probe(pool, code)
    assert sorted(env) == ["HOME", "LANG", "PATH", "TMPDIR"]
    assert os.environ["GRADTRACE_TEST_SECRET"] not in initial
    assert "GRADTRACE_TEST_SECRET" not in initial


def test_rlimits_cap_memory_cpu_processes_files_and_core(pool: PoolHarness) -> None:
    layer(pool, "rlimits")
    code = ("import resource, json\nprint(json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in "
            "['RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE', 'RLIMIT_CORE']}))")
    limits = probe(pool, code)
    assert limits["RLIMIT_CPU"] == [pool.settings.cpu_s, pool.settings.cpu_s + 1]
    assert limits["RLIMIT_CORE"] == [0, 0]
    assert limits["RLIMIT_FSIZE"] == [16 << 20, 16 << 20]
    assert limits["RLIMIT_NOFILE"] == [64, 64]
    assert limits["RLIMIT_NPROC"] == [16, 16]
    soft_as = limits["RLIMIT_AS"][0]
    assert pool.settings.memory_mb << 20 < soft_as < (pool.settings.memory_mb << 20) + (4 << 30)


def test_job_runs_as_its_own_unprivileged_uid(pool: PoolHarness) -> None:
    layer(pool, "uid")
    code = "import os, json\nprint(json.dumps([os.getpid(), os.getresuid(), os.getresgid(), os.getgroups()]))"
    pid, uids, gids, groups = probe(pool, code)
    assert uids == [UID_BASE + pid] * 3 and gids == [UID_BASE + pid] * 3 and groups == []


def test_no_new_privs_and_not_dumpable(pool: PoolHarness) -> None:
    layer(pool, "no_new_privs")
    code = ("import ctypes, json\nlibc = ctypes.CDLL(None)\nstatus = open('/proc/self/status').read()\n"
            "nnp = [l.split()[1] for l in status.splitlines() if l.startswith('NoNewPrivs')][0]\n"
            "print(json.dumps([nnp, libc.prctl(3, 0, 0, 0, 0)]))")
    assert probe(pool, code) == ["1", 0]


def test_network_namespace_is_empty(pool: PoolHarness) -> None:
    layer(pool, "netns")
    code = ("import os, json\nlines = open('/proc/self/net/dev').read().splitlines()[2:]\n"
            "print(json.dumps([os.readlink('/proc/self/ns/net'), [l.split(':')[0].strip() for l in lines]]))")
    ns, interfaces = probe(pool, code)
    assert ns != os.readlink("/proc/self/ns/net")
    assert interfaces == ["lo"]


def test_private_mounts_leave_only_the_job_tmpfs_writable(pool: PoolHarness) -> None:
    layer(pool, "mountns")
    code = (
        "import os, json, errno\nresult = {}\nopen('/tmp/mine', 'w').write('ok')\n"
        "st = os.statvfs('/tmp')\nresult['tmp'] = [st.f_blocks * st.f_frsize, st.f_files]\n"
        "for p in ['/var/tmp/x', '/dev/shm/x', '/x', '/work/x']:\n"
        "    try:\n        open(p, 'w')\n        result[p] = 'written'\n"
        "    except OSError as e:\n        result[p] = errno.errorcode[e.errno]\n"
        "print(json.dumps(result))")
    result = probe(pool, code)
    assert result.pop("tmp") == [16 << 20, 512]
    assert set(result.values()) <= {"EROFS", "EACCES", "ENOENT"}, result


def test_proc_shows_only_the_job_itself(pool: PoolHarness) -> None:
    layer(pool, "mountns")
    code = ("import os, json\n"
            "print(json.dumps([os.getpid(), [p for p in os.listdir('/proc') if p.isdigit()]]))")
    pid, visible = probe(pool, code)
    assert visible == [str(pid)]


def test_seccomp_blocks_fork_exec_and_sockets(pool: PoolHarness) -> None:
    layer(pool, "seccomp")
    code = (
        "import os, json, socket, errno\nstatus = open('/proc/self/status').read()\n"
        "mode = [l.split()[1] for l in status.splitlines() if l.startswith('Seccomp:')][0]\nout = {}\n"
        "for name, fn in [('fork', os.fork), ('exec', lambda: os.execv('/bin/true', ['true'])),\n"
        "                 ('socket', lambda: socket.socket(socket.AF_UNIX)),\n"
        "                 ('socketpair', socket.socketpair)]:\n"
        "    try:\n        fn()\n        out[name] = 'allowed'\n"
        "    except OSError as e:\n        out[name] = errno.errorcode[e.errno]\n"
        "print(json.dumps([mode, out]))")
    mode, out = probe(pool, code)
    assert mode == "2"
    assert out == {"fork": "EPERM", "exec": "EPERM", "socket": "EPERM", "socketpair": "EPERM"}


def test_landlock_denies_reading_outside_the_allowed_paths(pool: PoolHarness) -> None:
    layer(pool, "landlock")
    assert os.stat("/etc/passwd").st_mode & 0o004  # readable by anyone: only Landlock stops the job
    code = ("import json, errno\ntry:\n    open('/etc/passwd').read()\n    r = 'read'\n"
            "except OSError as e:\n    r = errno.errorcode[e.errno]\nprint(json.dumps(r))")
    assert probe(pool, code) == "EACCES"


def test_job_sits_in_its_own_memory_and_pids_cgroup(pool: PoolHarness) -> None:
    layer(pool, "cgroup")
    zygote = pool.pool.state().detail["zygote_pid"]
    code = "import json\nprint(json.dumps(open('/proc/self/cgroup').read()))"
    groups = probe(pool, code)
    assert f"memory:/gradtrace-{zygote}/job-" in groups or f"::/gradtrace-{zygote}/job-" in groups
    assert f"pids:/gradtrace-{zygote}/job-" in groups or f"::/gradtrace-{zygote}/job-" in groups


def test_without_sandbox_jobs_still_run_isolated_in_their_own_process() -> None:
    harness = PoolHarness(workers=1, sandbox=False, timeout_s=2.0, cpu_s=1)
    try:
        layers = harness.pool.state().detail["layers"]
        assert layers["seccomp"] == "off: GRADTRACE_SANDBOX=false" and layers["rlimits"] == "active"
        code = "import os, json\nprint(json.dumps([os.getpid(), os.getuid()]))"
        doc = harness.run(code)
        pid, uid = json.loads(doc["stdout"])
        assert pid != os.getpid() and uid == os.getuid()
        assert harness.run("while True:\n    pass\n", timeout_s=5.0)["status"] == "timeout"
    finally:
        harness.close()
