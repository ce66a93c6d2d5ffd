"""Threads the run starts that build their own graphs are named in ``threads_unrecorded`` and
the analysis says so (NOTE [other threads' graphs] in capture/threads.py), on both kernel sets;
threads whose work the recorder did see (a backward of the block's graph, a graph the block's
backward reaches) are not named."""

from __future__ import annotations

from typing import Any

import pytest

from .test_threads import FORWARD_IN_A_THREAD, THREADED

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

WORKERS = """\
import threading
def work(i):
    w = torch.full((3,), float(i + 1), requires_grad=True)
    (w * w).sum().backward()
    results[i] = w.grad.tolist()
results = {}
ts = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(sorted(results.items()))
"""


@BOTH
def test_four_workers_building_their_own_graphs_are_named(run: Any, native: bool) -> None:
    import threading

    before = threading.active_count()
    doc = run(WORKERS, native=native)
    assert doc["status"] == "ok", doc["error"]
    # the program ran as bare: every worker's gradient is torch's
    assert doc["stdout"] == "[(0, [2.0, 2.0, 2.0]), (1, [4.0, 4.0, 4.0]), (2, [6.0, 6.0, 6.0]), (3, [8.0, 8.0, 8.0])]\n"
    assert threading.active_count() == before
    threads = doc["threads_unrecorded"]
    assert sorted(t["name"] for t in threads) == [f"worker-{i}" for i in range(4)]
    for t in threads:
        assert t["backward_calls"] == t["unrecorded_backward_calls"] == 1
        assert t["nodes"] == 2  # MulBackward0 and SumBackward0 (AccumulateGrad has no number)
    (hint,) = [h for h in doc["analysis"]["hints"] if h["code"] == "threads-unrecorded"]
    assert "worker-0" in hint["title"] and hint["severity"] == "info"


@BOTH
@pytest.mark.parametrize("code", [THREADED, FORWARD_IN_A_THREAD], ids=["backward-there", "forward-there"])
def test_threads_whose_work_was_recorded_are_not_named(run: Any, native: bool, code: str) -> None:
    doc = run(code, native=native)
    assert doc["status"] == "ok", doc["error"]
    assert "threads_unrecorded" not in doc
    assert not any(h["code"] == "threads-unrecorded" for h in (doc.get("analysis") or {}).get("hints", []))


@BOTH
def test_a_thread_without_autograd_is_not_named(run: Any, native: bool) -> None:
    code = ("import threading\nout = []\n"
            "t = threading.Thread(target=lambda: out.append(torch.ones(3).sum().item()))\n"
            "t.start()\nt.join()\nprint(out)\n")
    doc = run(code, native=native)
    assert doc["stdout"] == "[3.0]\n"
    assert "threads_unrecorded" not in doc
