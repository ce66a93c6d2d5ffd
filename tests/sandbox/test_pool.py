"""The fork-server pool end to end: real zygote, real jailed children, real limits."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from conftest import LESSONS
from gradtrace.errors import DeviceUnavailable, PoolSaturated
from gradtrace.jobs import Job
from gradtrace.lessons import Lesson
from gradtrace.runners import RUNNERS, make_runner
from gradtrace.sandbox.pool import ForkServerPool
from gradtrace.settings import Settings
from sandbox.pool_harness import (
    PoolHarness,
    check_result,
    children_of,
    job_uids,
    survivors,
    used_children,
)

WARM_COMPILE = True  # lesson 15 compiles (see the pool fixture)
TRIVIAL = "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).sum()\ny.backward()\n"


SPIN = "while True:\n    pass\n"


async def _job_burning_cpu(idle: set[int], timeout_s: float = 60.0) -> int:
    """The pid of the one of the ``idle`` children (taken before the job was sent) that has
    started burning CPU: the job is inside it, however long a loaded machine took to get there.
    Idle children block on their socket and use no CPU."""
    def ticks(pid: int) -> int:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return -1
        return int(fields[11]) + int(fields[12])

    start = {pid: ticks(pid) for pid in idle}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid, before in start.items():
            if ticks(pid) - before >= 2:
                return pid
        await asyncio.sleep(0.02)
    raise AssertionError("the job never started burning CPU")


def _leaf_grad(doc: dict[str, object], name: str) -> object:
    nodes = doc["graph"]["nodes"]  # type: ignore[index]
    for node in nodes:  # type: ignore[attr-defined]
        if node["kind"] == "tensor" and node["name"] == name:
            return node["grad"]["values"]
    raise AssertionError(f"no tensor node {name!r} in {nodes}")


def _torch() -> Any:
    """torch as the oracle (numpy is not installed, which torch warns about once on import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import torch
    return torch


def test_trivial_snippet_returns_validated_graph_matching_torch(pool: PoolHarness) -> None:
    torch = _torch()

    doc = pool.run(TRIVIAL)
    assert doc["status"] == "ok", doc
    names = {n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"}
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    assert {type(y.grad_fn).__name__, "MulBackward0", "AccumulateGrad"} <= names
    y.backward()
    assert _leaf_grad(doc, "x") == x.grad.tolist()


def test_same_snippet_and_seed_give_the_same_document(pool: PoolHarness) -> None:
    code = "w = torch.randn(3, requires_grad=True)\n(w * 2).sum().backward()\n"
    assert pool.run(code, seed=7) == pool.run(code, seed=7)
    assert pool.run(code, seed=7)["id"] != pool.run(code, seed=8)["id"]


def test_sleeping_snippet_times_out_with_wall_clock_message(pool: PoolHarness) -> None:
    start = time.monotonic()
    doc = pool.run("import time\nprint('before')\ntime.sleep(60)\n", timeout_s=1.0)
    elapsed = time.monotonic() - start
    assert doc["status"] == "timeout"
    assert doc["message"] == "Stopped: the snippet ran longer than 1 s."
    assert elapsed < 30.0  # not the 60 s the snippet sleeps (a loaded machine answers late, never that late)
    assert doc["graph"] == {"nodes": [], "edges": []}


def test_busy_loop_hits_cpu_limit_and_says_cpu_time(pool: PoolHarness) -> None:
    # 60 s of wall clock: on a heavily loaded machine 1 s of CPU can take longer than 10 s
    doc = pool.run("while True:\n    pass\n", cpu_s=1, timeout_s=60.0)
    assert doc["status"] == "timeout"
    assert doc["message"] == "Stopped: the snippet used more than 1 s of CPU time.", doc.get("error")


GROWING_LOOP = ("import time\n"
                "x = torch.ones(2, requires_grad=True)\n"
                "y = x\n"
                "print('started')\n"
                "while True:\n"
                "    y = y * 1.0\n"
                "{pause}")


def _function_names(doc: dict[str, Any]) -> list[str]:
    return [n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"]


def test_a_run_stopped_at_its_wall_clock_limit_keeps_the_graph_it_built(pool: PoolHarness) -> None:
    doc = pool.run(GROWING_LOOP.format(pause="    time.sleep(0.01)\n"), timeout_s=1.0, cpu_s=5)
    assert doc["status"] == "timeout"
    assert doc["message"] == "Stopped: the snippet ran longer than 1 s."
    names = _function_names(doc)
    assert names.count("MulBackward0") >= 1 and "AccumulateGrad" in names  # how many: the CPU it got
    assert doc["error"]["type"] == "TimeLimitExceeded"
    assert doc["error"]["line"] in (5, 6, 7)  # stopped inside the loop (its head, its body)
    assert doc["stdout"].startswith("started")
    assert len(doc["events"]) == len(names)  # one forward event per recorded node


def test_a_run_stopped_at_its_cpu_limit_keeps_the_graph_and_the_line(pool: PoolHarness) -> None:
    # CPU spent in plain Python between nodes: capture is fast enough that a bare node loop
    # reaches the node limit within 1 s of CPU, and this test is about the CPU limit
    doc = pool.run(GROWING_LOOP.format(pause="    sum(range(20_000))\n"), cpu_s=1, timeout_s=60.0)
    assert doc["status"] == "timeout"
    assert doc["message"] == "Stopped: the snippet used more than 1 s of CPU time.", doc.get("error")
    assert _function_names(doc).count("MulBackward0") >= 1  # how many: the CPU speed
    assert doc["error"]["line"] in (5, 6, 7)  # stopped inside the loop


def test_a_snippet_that_swallows_the_stop_is_still_killed_at_the_limit(pool: PoolHarness) -> None:
    code = ("while True:\n"
            "    try:\n"
            "        while True:\n"
            "            pass\n"
            "    except BaseException:\n"
            "        pass\n")
    start = time.monotonic()
    doc = pool.run(code, cpu_s=1, timeout_s=3.0)
    assert doc["status"] == "timeout"
    assert time.monotonic() - start < 60.0  # the snippet never ends: an answer at all is the kill


def test_raw_fd_flood_is_output_limit_with_the_start_of_the_output(pool: PoolHarness) -> None:
    doc = pool.run("import os\nwhile True:\n    os.write(1, b'flood ' * 4096)\n")
    assert doc["status"] == "output_limit"
    assert doc["message"] == "Stopped: the snippet wrote more than 16 KiB of output."
    assert doc["stdout"].startswith("flood flood")
    assert len(doc["stdout"]) < 17 * 1024


def test_garbage_on_the_result_pipe_is_crashed_not_trusted(pool: PoolHarness) -> None:
    doc = pool.run("import os\nos.write(3, b'{\"status\": \"ok\", \"id\": 1')\nos._exit(0)\n")
    assert doc["status"] == "crashed"
    assert doc["message"] == "The snippet's process returned an invalid result."


def test_forged_result_cannot_change_code_seed_or_id(pool: PoolHarness) -> None:
    code = ("import os, json\nos.write(3, json.dumps({'id': 'forged', 'status': 'ok', 'code': 'other',"
            " 'seed': 99, 'stdout': 'forged'}).encode())\nos._exit(0)\n")
    doc = pool.run(code, seed=1)
    assert doc["code"] == code and doc["seed"] == 1 and doc["id"] != "forged"


def test_os_exit_is_crashed_with_the_exit_code(pool: PoolHarness) -> None:
    doc = pool.run("import os\nos._exit(3)\n")
    assert doc["status"] == "crashed"
    assert "exited with code 3" in doc["message"]


def test_signal_death_is_crashed_naming_the_signal(pool: PoolHarness) -> None:
    doc = pool.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert doc["status"] == "crashed"
    assert "SIGSEGV" in doc["message"]


def test_no_job_process_survives_a_run(pool: PoolHarness) -> None:
    zygote = pool.pool.state().detail["zygote_pid"]
    before = set(children_of(zygote))
    pool.run("import threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()\n")
    used = used_children(zygote, before)
    assert len(used) == 1
    assert survivors(job_uids(used)) == []


def test_resolve_device_accepts_cpu_and_auto_and_refuses_absent_cuda(pool: PoolHarness) -> None:
    assert pool.pool.resolve_device("cpu") == "cpu"
    assert pool.pool.resolve_device("auto") == "cpu"
    with pytest.raises(DeviceUnavailable) as info:
        pool.pool.resolve_device("cuda")
    assert info.value.message == (
        'cuda was requested but this server has no CUDA device; use device "cpu" or "auto"')


def test_state_reports_workers_zygote_and_every_layer(pool: PoolHarness) -> None:
    state = pool.pool.state()
    assert state.ready and state.kind == "forkserver" and state.workers == 2 and state.queue_capacity == 4
    assert state.busy == 0 and state.queued == 0 and state.cuda_available is False
    zygote = state.detail["zygote_pid"]
    os.kill(zygote, 0)
    layers = state.detail["layers"]
    for name in ("rlimits", "env", "fds", "uid", "no_new_privs", "seccomp", "landlock", "cgroup", "netns",
                 "mountns"):
        assert layers[name].startswith(("active", "off: ")), (name, layers)


def test_make_runner_picks_the_pool_and_refuses_unknown_names() -> None:
    settings = Settings()
    assert isinstance(make_runner(settings), ForkServerPool)
    assert set(RUNNERS) == {"forkserver", "queue"}
    with pytest.raises(ValueError, match="unknown runner 'nope'"):
        make_runner(settings.model_copy(update={"runner": "nope"}))
    with pytest.raises(ValueError, match="GRADTRACE_REDIS_URL"):  # tests/scale runs the queue for real
        make_runner(settings.model_copy(update={"runner": "queue"}))


def test_full_queue_raises_pool_saturated_at_once() -> None:
    harness = PoolHarness(workers=1, queue_size=1, timeout_s=5.0)
    try:
        async def scenario() -> None:
            job = Job(code="import time\ntime.sleep(3)\n", limits=harness.limits(timeout_s=1.0))
            running = [asyncio.ensure_future(harness.pool.run(job)) for _ in range(2)]
            while (harness.pool.state().busy, harness.pool.state().queued) != (1, 1):
                await asyncio.sleep(0.005)
            with pytest.raises(PoolSaturated):
                await harness.pool.run(job)
            # "at once": refused while both runs still hold the pool (each lasts its 1 s limit),
            # not after waiting for a slot, however slow the machine
            assert not any(task.done() for task in running)
            results = await asyncio.gather(*running)
            assert [r.status for r in results] == ["timeout", "timeout"]

        harness.call(scenario())
    finally:
        harness.close()


def test_cancelled_run_kills_the_job_and_frees_the_worker() -> None:
    harness = PoolHarness(workers=1, queue_size=0, timeout_s=30.0)
    try:
        async def scenario() -> None:
            job = Job(code=SPIN, limits=harness.limits(cpu_s=60))
            zygote = harness.pool.state().detail["zygote_pid"]
            idle_before = set(children_of(zygote))
            task = asyncio.ensure_future(harness.pool.run(job))
            await _job_burning_cpu(idle_before)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            start = time.monotonic()
            doc = (await harness.pool.run(Job(code="print('next')", limits=harness.limits()))).to_dict()
            assert doc["status"] == "ok" and doc["stdout"] == "next\n"
            # a worker still held by the spinning job would free up only at its 30 s limit
            assert time.monotonic() - start < 15.0
            used = used_children(zygote, idle_before)
            assert used
            assert survivors(job_uids(used)) == []

        harness.call(scenario())
    finally:
        harness.close()


def test_close_leaves_no_process_behind() -> None:
    harness = PoolHarness(workers=2)
    harness.run("print(1)")
    zygote = harness.pool.state().detail["zygote_pid"]
    kids = children_of(zygote)
    assert kids
    cgroups_on = harness.pool.state().detail["layers"]["cgroup"].startswith("active")
    harness.close()
    for pid in [zygote, *kids]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    if cgroups_on:  # and no per-job cgroup is left behind either
        assert not list(Path("/sys/fs/cgroup").glob(f"*/gradtrace-{zygote}"))
        assert not Path(f"/sys/fs/cgroup/gradtrace-{zygote}").exists()


def test_killed_zygote_is_restarted_and_the_running_job_reports_crashed() -> None:
    harness = PoolHarness(workers=1, timeout_s=10.0)
    try:
        async def scenario() -> None:
            old = harness.pool.state().detail["zygote_pid"]
            idle_before = set(children_of(old))
            task = asyncio.ensure_future(harness.pool.run(Job(code=SPIN, limits=harness.limits(cpu_s=60))))
            await _job_burning_cpu(idle_before)  # the job is inside its child when the zygote dies
            os.kill(old, signal.SIGKILL)
            doc = check_result(await task, SPIN)
            assert doc["status"] == "crashed" and "restarted" in doc["message"]
            for _ in range(1200):  # a new zygote imports torch: seconds, more on a busy machine
                if harness.pool.state().ready:
                    break
                await asyncio.sleep(0.1)
            assert harness.pool.state().detail["zygote_pid"] != old
            again = (await harness.pool.run(Job(code="print('back')", limits=harness.limits()))).to_dict()
            assert again["status"] == "ok" and again["stdout"] == "back\n"

        harness.call(scenario())
    finally:
        harness.close()


def test_result_larger_than_the_cap_is_output_limit(pool: PoolHarness) -> None:
    code = ("x = torch.ones(3, requires_grad=True)\nfor _ in range(200):\n    x = x * 1.0\n"
            "x.sum().backward()\n")
    doc = pool.run(code, result_bytes=4096)
    assert doc["status"] == "output_limit"
    assert doc["message"] == "Stopped: the run's result was larger than 4 KiB."
    assert pool.run(code)["status"] == "ok"  # the same snippet fits the default cap


def test_cuda_job_on_a_host_without_cuda_is_refused(pool: PoolHarness) -> None:
    with pytest.raises(DeviceUnavailable, match="no CUDA device"):
        pool.call(pool.pool.run(Job(code="x = 1", device="cuda", limits=pool.limits())))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda item: item.stem)
def test_every_lesson_snippet_runs_inside_the_sandbox(pool: PoolHarness, lesson: Lesson) -> None:
    """The jail must not break real lessons (torch.compile included): each ends ok or with its
    own deliberate autograd error, never with a limit, a crash or a sandbox permission error."""
    doc = pool.run(lesson.code, timeout_s=10.0, cpu_s=2)
    assert doc["status"] in ("ok", "error"), (doc["status"], doc.get("message"))
    if doc["status"] == "error":
        assert doc["error"]["type"] == "RuntimeError", doc["error"]
        assert "Permission" not in doc["error"]["message"]


MODULE_LOOP = ("lin = nn.Linear(4, 4)\n"
               "y = torch.ones(1, 4, requires_grad=True)\n"
               "while True:\n"
               "    y = torch.tanh(lin(y))\n")


@pytest.mark.parametrize("attempt", range(3))
def test_a_stop_landing_inside_captures_hooks_keeps_a_whole_record(pool: PoolHarness, attempt: int) -> None:
    # most of this loop's time is capture's own hooks (module pre/post, the function mode), so the
    # stop mostly lands inside them; whatever the timing, no op is recorded by halves
    doc = pool.run(MODULE_LOOP, timeout_s=0.5 + 0.25 * attempt, cpu_s=30)
    assert doc["status"] in ("timeout", "graph_limit"), doc["message"]  # which: the machine's speed
    names = _function_names(doc)
    assert len(doc["events"]) == len(names)  # one forward event per recorded node
    assert not doc.get("recorder_errors"), doc.get("recorder_errors")
