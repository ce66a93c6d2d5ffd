"""Run documents for storage and API tests, built from the contract (no torch, no sandbox).

``chain_document(n)`` is a synthetic but contract-shaped run: ``n`` function nodes in a chain
(``MulBackward0`` / ``AddBackward0`` alternating), a leaf tensor feeding it through an
``AccumulateGrad``, one forward event per function node, one backward pass with a backward
event per node carrying small gradient values. Sizes grow linearly with ``n``, which is what
the share benchmarks need (a 3,000-node document).
"""

from __future__ import annotations

import copy
from typing import Any

from gradtrace.schema import SCHEMA_VERSION, document_id


def tensor_value(values: list[float]) -> dict[str, Any]:
    return {"shape": [len(values)], "dtype": "float32", "values": values,
            "stats": {"min": min(values), "max": max(values), "mean": sum(values) / len(values),
                      "norm": sum(v * v for v in values) ** 0.5}}


def chain_document(n: int = 3, *, seed: int = 0, code: str | None = None) -> dict[str, Any]:
    """A valid run document with ``n`` function nodes (plus AccumulateGrad and two tensors)."""
    nodes: list[dict[str, Any]] = [
        {"id": "t0", "kind": "tensor", "name": "x", "line": 1, "shape": [4], "dtype": "float32",
         "device": "cpu", "role": "leaf", "grad": tensor_value([1.0 + seed, 2.0, 3.0, 4.0])},
        {"id": "f0", "kind": "function", "name": "AccumulateGrad", "line": 1, "shape": [4],
         "dtype": "float32", "device": "cpu", "seq": 0},
    ]
    edges: list[dict[str, Any]] = [{"source": "t0", "target": "f0"}]
    events: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        nid = f"f{i}"
        nodes.append({"id": nid, "kind": "function", "name": "MulBackward0" if i % 2 else "AddBackward0",
                      "line": 2 + i % 7, "shape": [4], "dtype": "float32", "device": "cpu", "seq": i})
        edges.append({"source": f"f{i - 1}", "target": nid, "input_nr": 0})
        events.append({"phase": "forward", "node": nid, "line": 2 + i % 7})
    nodes.append({"id": "t1", "kind": "tensor", "name": "y", "line": 2 + n % 7, "shape": [],
                  "dtype": "float32", "device": "cpu", "role": "root"})
    edges.append({"source": f"f{n}", "target": "t1"})
    for i in range(n, -1, -1):
        g = [0.5 * i + seed, -1.0, float(i % 3), 2.0]
        events.append({"phase": "backward", "node": f"f{i}", "pass": 0, "line": 3 + n % 7,
                       "grad_outputs": [tensor_value(g)], "grad_inputs": [tensor_value(g[::-1])]})
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "id": "", "status": "ok", "error": None, "stdout": f"seed {seed}\n",
        "device": "cpu", "graph": {"nodes": nodes, "edges": edges}, "events": events,
        "code": code if code is not None else f"# synthetic chain of {n}\n", "seed": seed,
        "passes": [{"index": 0, "api": "Tensor.backward", "line": 3 + n % 7, "roots": ["t1"]}],
    }
    doc["id"] = document_id(doc)
    return doc


def variant(doc: dict[str, Any], stdout: str) -> dict[str, Any]:
    """The same document with another stdout: a different document (different hash)."""
    out = copy.deepcopy(doc)
    out["stdout"] = stdout
    return out
