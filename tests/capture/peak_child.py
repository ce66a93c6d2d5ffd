"""Peak memory of one recording in a fresh process (NOTE [held within the budget] in
capture/tensorfile.py): ``python peak_child.py NAME BUDGET KERNELS`` records program NAME with
a tensor budget of BUDGET bytes (``none``: no tensor file; ``bare``: the program alone, not
recorded), builds its document, and prints a JSON line: the process's peak resident memory
(``VmHWM``, MiB, from its start: a fresh process each) and the core's held-bytes high-water
mark. :func:`peak` runs it; tests/capture/test_peak_memory.py and bench/bench_peak_memory.py
read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

WIDE = """import torch
from torch import nn
torch.manual_seed(0)
net = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.Tanh()) for _ in range(6)])
x = torch.randn(1024, 1024)
for _ in range(2):
    net.zero_grad()
    net(x).sum().backward()
"""
"""A wide MLP whose tensors pass a 32 MiB budget many times over: 4 MiB activations, twelve a
step, as many gradients, 4 MiB weight gradients, two steps."""


def _programs() -> dict[str, str]:
    here = Path(__file__).resolve().parent
    sys.path[:0] = [str(here), str(here.parent)]
    from programs import GRU_200

    return {"wide": WIDE, "GRU-200": GRU_200}


def _vm_hwm_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def peak(name: str, budget: int | str, kernels: str) -> dict[str, Any]:
    """``{"peak_mib", "held_peak", "file_bytes"}`` of recording ``name`` in a fresh process
    (``kernels``: ``core`` or ``python``)."""
    env = {**os.environ, "GRADTRACE_KERNELS": "python" if kernels == "python" else "native"}
    out = subprocess.run([sys.executable, __file__, name, str(budget), kernels], capture_output=True, text=True,
                         check=True, env=env, timeout=600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main(name: str, budget_arg: str, kernels: str) -> None:
    import torch

    import gradtrace

    code = _programs()[name]
    ns: dict[str, Any] = {"__name__": "__main__"}
    if budget_arg == "bare":
        exec(compile(code, "<snippet>", "exec"), ns)
        print(json.dumps({"peak_mib": _vm_hwm_mib(), "held_peak": 0, "file_bytes": 0}))
        return
    budget = None if budget_arg == "none" else int(budget_arg)
    torch.manual_seed(0)
    with gradtrace.record(native=kernels != "python", tensor_budget=budget, _filename="<snippet>",
                          _namespace=ns, _fresh=True) as rec:
        exec(compile(code, "<snippet>", "exec"), ns)
    doc = rec.document()
    assert doc.status == "ok", doc.error
    print(json.dumps({"peak_mib": _vm_hwm_mib(), "held_peak": rec.recorder.core.held_peak(),
                      "file_bytes": doc.tensors.bytes if doc.tensors is not None else 0}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
