"""The seccomp allow-list (NOTE [seccomp allow-list] in gradtrace/sandbox/seccomp_filter.py) is
measured, complete for real jobs, and refuses by default.

The measurement runs every lesson, the real programs, lesson 15 with torch.compile warmed, a
gradient check and a job that starts Python and torch threads through a real pool under strace
(``syscall_trace.py``) and fails on any syscall a job child made after lock-down that the list
does not allow: a torch or CPython upgrade that needs a new syscall shows up here, named, before
a job silently gets EPERM in production.
"""

from __future__ import annotations

import errno
import shutil

import pytest

from gradtrace.sandbox.seccomp_filter import ALLOWED, ALLOWED_GROUPS, REFUSED_EXAMPLES, build_filter
from sandbox.pool_harness import PoolHarness
from sandbox.syscall_trace import THREADS, benign_jobs, trace_jobs


def test_the_list_has_no_duplicates_and_refuses_the_old_deny_list() -> None:
    assert len(ALLOWED) == len(set(ALLOWED))
    assert set(REFUSED_EXAMPLES).isdisjoint(ALLOWED)
    assert {"clone", "clone3", "seccomp", "execve", "socket"}.isdisjoint(ALLOWED)
    assert all(ALLOWED_GROUPS.values())


def test_the_filter_builds_and_its_default_is_eperm() -> None:
    pyseccomp = pytest.importorskip("pyseccomp", reason="libseccomp's binding is needed where jobs run")
    flt = build_filter()
    assert flt.get_attr(pyseccomp.Attr.ACT_DEFAULT) == pyseccomp.ERRNO(errno.EPERM)


@pytest.mark.skipif(shutil.which("strace") is None, reason="the measurement needs /usr/bin/strace")
def test_real_jobs_call_only_allowed_syscalls() -> None:
    jobs = [*benign_jobs(), {"name": "threads", "code": THREADS}]
    counts, statuses = trace_jobs(jobs, warm_compile=True)
    # Lessons 06 and 08 end in the error they teach; nothing may crash or hit a limit.
    assert [s for s in statuses if s[1] not in ("ok", "error")] == []
    assert [s[0] for s in statuses if s[1] == "error"] == ["06_graph_freed", "08_inplace_hazard"]
    assert len(statuses) == len(jobs)
    # The lock-down itself was seen (the trace found the job children and their threads).
    # (the pool may kill a child once its result is in, before it reaches exit_group: NOTE [early result])
    assert counts["exit_group"] >= len(jobs) // 2 and counts["clone"] >= 1 and counts["futex"] > 0
    missing = sorted(set(counts) - set(ALLOWED) - {"clone", "clone3"})
    assert missing == [], f"jobs called syscalls the allow-list refuses: {missing}"


def test_threads_work_under_the_filter(pool: PoolHarness) -> None:
    state = pool.pool.state().detail["layers"]["seccomp"]
    if not state.startswith("active"):
        pytest.skip(f"layer seccomp is not available here: {state}")
    doc = pool.run(THREADS)
    assert doc["status"] == "ok", (doc.get("message"), doc.get("error"))
