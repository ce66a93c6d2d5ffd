"""Synthetic run documents of any size, shaped like autograd graphs, for large-graph tests and
the front-end benchmark (bench/bench_frontend.py).

Real snippets cannot cheaply make a 20,000-node graph in a test, and the page must not care
where a document came from. The shapes are the two that stress a layout: a transformer-like stack
(blocks with residual edges and a parameter leaf per matmul) or an unrolled RNN whose weights
are shared by every step (the case that needs per-use proxies). Deterministic for a size.
"""

from __future__ import annotations

import random
from typing import Any

from gradtrace.schema import SCHEMA_VERSION


def _tv(value: float, shape: list[int] | None = None) -> dict[str, Any]:
    shape = shape if shape is not None else []
    return {"shape": shape, "dtype": "float32", "values": value if not shape else None,
            "stats": {"min": value, "max": value, "mean": value, "norm": abs(value)}}


def synthetic_document(n_nodes: int, shape: str = "transformer", seed: int = 0,
                       modules: bool = False) -> dict[str, Any]:
    """A valid run document with about ``n_nodes`` nodes, forward and one backward pass.

    With ``modules``, the transformer shape puts its nodes in eight ``block.N`` modules (which
    the page collapses by default); without, every node is drawn.
    """
    rng = random.Random(seed)
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    ops = ["AddmmBackward0", "MulBackward0", "AddBackward0", "TanhBackward0", "ViewBackward0",
           "SoftmaxBackward0", "BmmBackward0", "NativeLayerNormBackward0", "TransposeBackward0"]
    shared: list[str] = []
    if shape == "rnn":
        for j in range(4):
            leaf, acc = f"w{j}", f"a{j}"
            nodes.append({"id": acc, "kind": "function", "name": "AccumulateGrad", "line": 2,
                          "shape": [32, 32], "dtype": "float32", "device": "cpu"})
            nodes.append({"id": leaf, "kind": "tensor", "name": f"cell.weight_{j}", "role": "leaf", "line": 2,
                          "shape": [32, 32], "dtype": "float32", "device": "cpu"})
            edges.append({"source": leaf, "target": acc})
            shared.append(acc)
    funcs: list[str] = []
    i = 0
    while len(nodes) < n_nodes - 1:
        fid = f"f{i}"
        line = 3 + (i % 20)
        module = f"block.{(i // 40) % 8}" if modules and shape == "transformer" else None
        nodes.append({"id": fid, "kind": "function", "name": rng.choice(ops), "line": line, "module": module,
                      "shape": [8, 64], "dtype": "float32", "device": "cpu"})
        inputs: list[str] = []
        if funcs:
            inputs.append(funcs[-1])
        if funcs and rng.random() < 0.2:
            inputs.append(funcs[max(0, len(funcs) - 1 - rng.randint(2, 30))])
        if shape == "rnn" and rng.random() < 0.5:
            inputs.append(rng.choice(shared))
        elif rng.random() < 0.2:
            leaf, acc = f"p{i}", f"g{i}"
            nodes.append({"id": acc, "kind": "function", "name": "AccumulateGrad", "line": line,
                          "module": module, "shape": [64], "dtype": "float32", "device": "cpu"})
            nodes.append({"id": leaf, "kind": "tensor", "name": f"param{i}", "role": "leaf", "line": line,
                          "shape": [64], "dtype": "float32", "device": "cpu"})
            edges.append({"source": leaf, "target": acc})
            inputs.append(acc)
        for nr, src in enumerate(inputs):
            edges.append({"source": src, "target": fid, "input_nr": nr})
        funcs.append(fid)
        i += 1
    root = "out"
    nodes.append({"id": root, "kind": "tensor", "name": "loss", "role": "root", "line": 25, "shape": [],
                  "dtype": "float32", "device": "cpu"})
    edges.append({"source": funcs[-1], "target": root})
    return _with_events(nodes, edges, rng)


def _with_events(nodes: list[dict[str, Any]], edges: list[dict[str, Any]],
                 rng: random.Random) -> dict[str, Any]:
    inputs: dict[str, list[dict[str, Any]]] = {}
    for e in edges:
        inputs.setdefault(e["target"], []).append(e)
    funcs = [n for n in nodes if n["kind"] == "function"]
    events: list[dict[str, Any]] = [{"phase": "forward", "node": n["id"], "line": n["line"]} for n in funcs]
    for n in reversed(funcs):
        ins = inputs.get(n["id"], []) if n["name"] != "AccumulateGrad" else []
        g_in = [_tv(round(rng.uniform(-2, 2), 3)) for _ in ins]
        ev: dict[str, Any] = {"phase": "backward", "node": n["id"], "pass": 0, "line": 25,
                              "grad_outputs": [_tv(1.0)], "grad_inputs": g_in}
        if n["name"] == "AccumulateGrad":
            ev["grad"] = _tv(round(rng.uniform(-1, 1), 3))
        events.append(ev)
    return {"schema_version": SCHEMA_VERSION, "id": f"synthetic{len(nodes)}", "status": "ok", "error": None,
            "stdout": "",
            "device": "cpu", "graph": {"nodes": nodes, "edges": edges}, "events": events,
            "passes": [{"index": 0, "api": "Tensor.backward", "line": 25, "roots": ["out"]}],
            "code": "# a synthetic document\n"}
