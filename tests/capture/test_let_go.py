"""A recorded block's recorder, ``record`` and documents are freed by their last reference,
not left to a full collection (NOTE [no cycle outlives the block] in capture/recorder.py).

The cyclic collector is off while each case runs: whatever is still alive once the caller's
references are gone was held by a reference cycle, which in a notebook or a worker process
waits for a rare full collection with tens of MB behind it. Both kernel sets; ordinary
training, a program that raises, a limit, threads. (``run_snippet``, a sandbox or CLI process's
one run, does not let go: NOTE [no cycle outlives the block] in capture/recorder.py and the
``record.__exit__`` beside it.)
"""

from __future__ import annotations

import gc
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

import gradtrace

from .test_threads_unrecorded import WORKERS

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

TRAINING = """\
import torch
from torch import nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.randn(16, 4)
for step in range(3):
    opt.zero_grad()
    h = net[0](x)
    h.retain_grad()
    h.register_hook(lambda g: g * 1.0)
    loss = net[2](net[1](h)).pow(2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
    opt.step()
"""

RAISES = """\
import torch
a = torch.ones(3, requires_grad=True)
b = a.sigmoid()
b.mul_(2)
b.sum().backward()
"""

LONG = """\
import torch
x = torch.ones(3, requires_grad=True)
y = x
for _ in range(200):
    y = y * 1.01
y.sum().backward()
"""


@pytest.fixture()
def no_collector() -> Iterator[None]:
    """The cyclic collector off for the test (what it would free is what the test looks for)."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _recorded(code: str, native: bool, **kwargs: Any) -> tuple[list[weakref.ref[Any]], dict[str, Any]]:
    """Record ``code`` as a notebook or a benchmark does, build and read its document; weak
    references to what the block made, and what the document said."""
    ns: dict[str, Any] = {"__name__": "__main__"}
    with (warnings.catch_warnings(record=True) as warned,
          gradtrace.record(native=native, _filename="<snippet>", _namespace=ns, _fresh=True, **kwargs) as rec):
        try:
            warnings.simplefilter("always")
            exec(compile(code, "<snippet>", "exec"), ns)
        except RuntimeError:
            pass  # the program's own error: the document says it
    doc = rec.document()
    said = {"warned": [str(w.message)[:40] for w in warned], "status": doc.status, "nodes": len(doc.graph.nodes),
            "id": doc.id, "analysis": doc.analysis is not None, "threads": len(doc.threads_unrecorded or ())}
    if doc.tensors is not None:  # a tensor read back, as a user does
        key = next((o.key for n in doc.graph.nodes for o in n.output or () if o.key), None)
        said["output"] = None if key is None else doc.tensor(key).shape
    refs = [weakref.ref(rec), weakref.ref(rec.recorder), weakref.ref(doc)]
    if rec._mode is not None:
        refs.append(weakref.ref(rec._mode))
    ns.clear()  # the snippet's own functions hold their globals: a cycle of the program's, not ours
    return refs, said


def _alive(refs: list[weakref.ref[Any]]) -> list[str]:
    return [type(r()).__name__ for r in refs if r() is not None]


@BOTH
@pytest.mark.parametrize("code,kwargs", [
    (TRAINING, {"tensor_budget": 1 << 20}),
    (TRAINING, {}),
    (RAISES, {"tensor_budget": 1 << 20}),
    (LONG, {"max_nodes": 50}),
    ("import torch\n" + WORKERS.replace("print(sorted(results.items()))\n", ""), {}),
], ids=["training-with-tensors", "training", "raises", "limit", "threads"])
def test_the_last_reference_frees_the_recorder_and_its_documents(no_collector: None, native: bool, code: str,
                                                                 kwargs: dict[str, Any]) -> None:
    # A program's first run in a process may import torch's lazy modules (the first optimizer
    # imports dynamo), and an import in progress holds the frames that started it: a run first.
    _recorded(code, native, **kwargs)
    gc.collect()
    refs, said = _recorded(code, native, **kwargs)
    assert said["id"] and (said["nodes"] > 0 or said["threads"] == 4), said
    assert (said["status"] == "graph_limit") == bool(said["warned"]), said
    assert _alive(refs) == [], f"held by a reference cycle after the block: {_alive(refs)} ({said})"
