"""Recording never changes what the program does on another thread (NOTE [other threads] in
capture/recorder.py): a backward run by a ``threading.Thread`` is recorded, and a cap hit
there stops the recording, never that thread's backward. Both recorders."""

from __future__ import annotations

from typing import Any

import pytest

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

THREADED = """\
import threading
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
errors = []
def work():
    try:
        y.backward()
    except BaseException as e:
        errors.append(repr(e))
t = threading.Thread(target=work)
t.start()
t.join()
print(x.grad.tolist(), errors)
"""


@BOTH
def test_a_backward_on_another_thread_is_recorded(run: Any, native: bool) -> None:
    doc = run(THREADED, native=native)
    assert doc["status"] == "ok", doc["message"]
    assert doc["stdout"] == "[2.0, 4.0] []\n"
    assert "recorder_errors" not in doc
    assert [p["api"] for p in doc["passes"]] == ["engine"]
    (x,) = [n for n in doc["graph"]["nodes"] if n["name"] == "x"]
    assert [h["values"] for h in x["grad_history"]] == [[2.0, 4.0]]
    assert x["grad"]["values"] == [2.0, 4.0]
    assert sum(e["phase"] == "backward" for e in doc["events"]) == 3


def test_both_recorders_record_the_thread_alike(run: Any) -> None:
    assert run(THREADED, native=False)["id"] == run(THREADED, native=True)["id"]


@BOTH
def test_a_cap_hit_on_another_thread_stops_recording_not_the_thread(run: Any, native: bool) -> None:
    doc = run(THREADED + "print('main goes on')\n", native=native, max_events=1)
    assert doc["stdout"] == "[2.0, 4.0] []\nmain goes on\n"
    assert doc["status"] == "graph_limit"
    assert "event limit" in doc["message"]
    assert "recorder_errors" not in doc


@BOTH
def test_record_block_with_a_thread(native: bool) -> None:
    import threading

    import torch

    import gradtrace

    x = torch.tensor([3.0], requires_grad=True)
    with gradtrace.record(native=native, max_document_bytes=1 << 20) as rec:
        y = (x * x).sum()
        t = threading.Thread(target=y.backward)
        t.start()
        t.join()
    assert x.grad is not None and x.grad.tolist() == [6.0]
    doc = rec.document()
    assert doc.status == "ok"
    (leaf,) = [n for n in doc.graph.nodes if n.name == "x"]
    assert len(leaf.grad_history) == 1


FORWARD_IN_A_THREAD = """\
import threading
x = torch.tensor([1.0, 2.0], requires_grad=True)
for _ in range(20):
    z = (x * 3).exp()
out = {}
def work():
    out["y"] = (x * x).sin().sum()
t = threading.Thread(target=work)
t.start()
t.join()
out["y"].backward()
"""


@BOTH
def test_a_graph_built_on_another_thread_is_walked_whole(run: Any, native: bool) -> None:
    """Autograd numbers nodes per thread: the other thread's nodes are numbered from 0, below
    the snippet's. A snippet runs in a fresh namespace, where no older graph can be reached,
    so nothing is cut off by number (NOTE [nodes from before the block] in graph.py)."""
    doc = run(FORWARD_IN_A_THREAD, native=native)
    names = [n["name"] for n in doc["graph"]["nodes"]]
    assert {"SinBackward0", "SumBackward0"} <= set(names)
    (sin,) = [n for n in doc["graph"]["nodes"] if n["name"] == "SinBackward0"]
    assert any(e["target"] == sin["id"] for e in doc["graph"]["edges"])


@pytest.mark.parametrize("extra", [2800, 3500, 4000])
def test_the_size_cap_on_another_thread_is_the_same_on_both_recorders(run: Any, extra: int) -> None:
    """The document's size estimate stops both recorders at the same event of a backward run
    by another thread (the core's budget is kept exact), and that backward completes."""
    docs = [run(THREADED, native=native, max_document_bytes=(512 << 10) + extra) for native in (False, True)]
    for doc in docs:
        assert doc["status"] == "graph_limit" and "size limit" in doc["message"]
        assert doc["stdout"] == "[2.0, 4.0] []\n"
    assert docs[0]["id"] == docs[1]["id"]
