"""In the real sandbox: GradScaler's unscale is seen and the final ``.grad`` is torch's, a
parameter keeps its module path after a loop over ``named_parameters()``, and threads that
built graphs the recorder did not see are named (NOTE [gradient edits] in
capture/gradedits.py, NOTE [where a tensor lives] in capture/frames.py, NOTE [other threads'
graphs] in capture/threads.py)."""

from __future__ import annotations

import torch
from torch import nn

from capture.test_grad_edits import AMP
from capture.test_threads_unrecorded import WORKERS
from sandbox.pool_harness import PoolHarness

POOL_LIMITS = {"timeout_s": 60.0, "cpu_s": 30}
"""The pool's own limits: a job asking for 30 s of CPU gets no more than its pool allows, and the
AMP loop takes over the other modules' 2 s on a loaded machine."""

PROGRAM = AMP + "for k, p in model.named_parameters():\n    print(k, round(p.grad.norm().item(), 4))\n"


def test_amp_in_the_sandbox_shows_torchs_gradients_by_their_paths(pool: PoolHarness) -> None:
    doc = pool.run(PROGRAM, timeout_s=60.0, cpu_s=30)  # a loaded machine: no race with the limit
    assert doc["status"] == "ok", (doc["error"], doc["message"])
    ns: dict[str, object] = {"torch": torch, "nn": nn}
    exec(compile(AMP, "<bare>", "exec"), ns)
    model = ns["model"]
    assert isinstance(model, nn.Module)
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"}
    assert set(leaves) == {f"model.{k}" for k, _ in model.named_parameters()}  # `p` names none
    for k, p in model.named_parameters():
        got = torch.tensor(leaves[f"model.{k}"]["grad"]["values"])
        torch.testing.assert_close(got, p.grad, rtol=1.3e-6, atol=1e-6)
        assert [e["line"] for e in leaves[f"model.{k}"]["grad_edits"]] == [12, 12, 12]


def test_worker_threads_in_the_sandbox_are_named(pool: PoolHarness) -> None:
    doc = pool.run(WORKERS, timeout_s=60.0, cpu_s=30)
    assert doc["status"] == "ok", (doc["error"], doc["message"])
    assert sorted(t["name"] for t in doc["threads_unrecorded"]) == [f"worker-{i}" for i in range(4)]
