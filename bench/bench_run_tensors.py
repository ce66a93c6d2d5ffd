"""The service's run with its tensor file against the same run without: ``POST /api/runs`` p50.

``python bench/bench_run_tensors.py`` starts the real service twice at once (the default
``GRADTRACE_TENSOR_BUDGET_MB``, and ``0``: no tensor file), posts the same programs to each in
turn (alternating, so both see the same machine load), and prints each one's p50 and the ratio
(the target is <= 1.2x). The programs: the chain-rule lesson (a trivial run), the MLP lesson,
and a small MLP's training step.
"""

from __future__ import annotations

import os

import httpx

from common import Row, print_table
from gradtrace.lessons import lesson

PROGRAMS = {
    "chain rule lesson": lesson("chain_rule").code,
    "MLP loss lesson": lesson("mlp_loss").code,
    "MLP training step": ("net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))\n"
                          "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
                          "for _ in range(5):\n"
                          "    opt.zero_grad()\n"
                          "    F.cross_entropy(net(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()\n"
                          "    opt.step()\n"),
}


def main() -> int:
    from conftest import running_server

    n = int(os.environ.get("BENCH_N", "40"))
    with running_server() as kept, running_server({"GRADTRACE_TENSOR_BUDGET_MB": "0"}) as bare, \
            httpx.Client(timeout=120) as client:
        rows: list[Row] = []
        for name, code in PROGRAMS.items():
            samples: dict[str, list[float]] = {"with": [], "without": []}
            for i in range(n + 3):
                for label, server in (("with", kept), ("without", bare)):
                    r = client.post(server.url + "/api/runs", json={"code": code, "seed": 1})
                    r.raise_for_status()
                    assert ("tensors" in r.json()) == (label == "with"), label
                    if i >= 3:  # warm-up
                        samples[label].append(r.elapsed.total_seconds())
            without = Row(f"{name}: without tensors", samples["without"])
            rows += [without, Row(f"{name}: with tensors", samples["with"], baseline="without",
                                  baseline_median_s=without.median)]
        print_table("POST /api/runs p50, tensor file kept vs not (same run, same machine)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
