"""Activation layers' shares by iteration: saturated tanh/sigmoid outputs and dead ReLUs, read
from the kept forward outputs (``n{id}.out0`` in the tensor file).

NOTE [saturated and dead]
    A tanh output is saturated when ``|y| > 0.97`` (the threshold of Karpathy's makemore
    lecture: past it tanh's local gradient ``1 − y²`` is below 0.06); a sigmoid output when it
    is within 0.015 of 0 or 1 (the same distance from its ends on its half-as-wide range, so
    ``|2y − 1| > 0.97``). A ReLU output is dead when it is exactly 0: no gradient flows back
    through that element. A layer is one op at one place of the network (its module, its
    name and its line): its occurrences are its iterations, each at the backward pass that
    walked it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import compress
from operator import methodcaller
from typing import Any

import numpy as np

SATURATION = 0.97
_KINDS = {"TanhBackward0": "tanh", "SigmoidBackward0": "sigmoid", "ReluBackward0": "relu",
          "GeluBackward0": None}
_NAME = methodcaller("get", "name")


def _hits(kind: str, ys: list[np.ndarray]) -> list[int]:
    """How many of each of ``ys``' elements are saturated (tanh, sigmoid) or dead (relu): the
    arrays of one shape and dtype in one stack and one count (a layer's outputs at each
    iteration, the usual case), each element compared as it is alone."""
    out = [0] * len(ys)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, y in enumerate(ys):
        groups.setdefault((y.shape, y.dtype), []).append(k)
    for ks in groups.values():
        y = np.stack([ys[k] for k in ks]).reshape(len(ks), -1).astype(np.float64, copy=False)
        if kind == "tanh":
            hit = np.abs(y) > SATURATION
        elif kind == "sigmoid":
            hit = np.abs(2.0 * y - 1.0) > SATURATION
        else:
            hit = y == 0
        for k, c in zip(ks, np.count_nonzero(hit, axis=1).tolist(), strict=True):
            out[k] = int(c)
    return out


def activation_layers(nodes: list[Mapping[str, Any]], pass_of: Mapping[str, int],
                      read: Callable[[str], np.ndarray | None]) -> list[dict[str, Any]]:
    """Each activation layer with its share at each iteration it was walked (NOTE [saturated and
    dead]), in network order (its first occurrence); each layer's outputs counted at once."""
    layers: dict[tuple[Any, ...], dict[str, Any]] = {}
    # the activations among the nodes, picked out in C (a node's name is a string or None)
    for n in compress(nodes, map(_KINDS.get, map(_NAME, nodes))):
        kind = _KINDS[n["name"]]
        if n.get("kind") != "function":
            continue
        p = pass_of.get(str(n["id"]))
        out = n.get("output") or []
        key = out[0].get("key") if out and isinstance(out[0], Mapping) else None
        if p is None or key is None:
            continue
        y = read(str(key))
        if y is None:
            continue
        ident = (n.get("module"), kind, n.get("line"))
        layer = layers.setdefault(ident, {"module": n.get("module"), "kind": kind, "line": n.get("line"),
                                          "passes": [], "nodes": [], "ys": [], "at": []})
        if not layer["passes"] or layer["passes"][-1] != p:
            layer["passes"].append(p)
            layer["nodes"].append(str(n["id"]))
        # more calls in one iteration (an RNN's steps) add to one share over all of them
        layer["ys"].append(np.asarray(y))
        layer["at"].append(len(layer["passes"]) - 1)
    found = []
    for layer in layers.values():
        ys, at = layer.pop("ys"), layer.pop("at")
        hit, size = [0] * len(layer["passes"]), [0] * len(layer["passes"])
        for k, y, h in zip(at, ys, _hits(layer["kind"], ys), strict=True):
            hit[k] += h
            size[k] += int(y.size)
        layer["share"] = [h / n if n else None for h, n in zip(hit, size, strict=True)]
        found.append(layer)
    return found
