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
        counts = _row_hits(kind, np.stack([ys[k] for k in ks]).reshape(len(ks), -1))
        for k, c in zip(ks, counts, strict=True):
            out[k] = int(c)
    return out


def activation_layers(nodes: list[Mapping[str, Any]], pass_of: Mapping[str, int],
                      read: Callable[[str], np.ndarray | None],
                      gather: Callable[[list[str]], Any] | None = None) -> list[dict[str, Any]]:
    """Each activation layer with its share at each iteration it was walked (NOTE [saturated and
    dead]), in network order (its first occurrence); each layer's outputs counted at once, read
    in one ``gather`` where the reader has it (``analysis/dynamics/read.py``) and they share a
    shape and a dtype (a layer's outputs at each iteration, the usual case)."""
    return _gathered(nodes, pass_of, read, gather or _one_by_one)


def _one_by_one(keys: list[str]) -> None:
    """A reader without ``gather``: every output is read by its key."""
    return None


def _gathered(nodes: list[Mapping[str, Any]], pass_of: Mapping[str, int], read: Callable[[str], np.ndarray | None],
              gather: Callable[[list[str]], Any]) -> list[dict[str, Any]]:
    """:func:`activation_layers` with each layer's outputs gathered in one read: the keys first,
    then one array per layer (its rows counted at once, as ``_hits`` counts a stack of them);
    a layer whose outputs differ in shape or dtype is read key by key, and an output that
    cannot be read is left out, as there."""
    layers: dict[tuple[Any, ...], tuple[dict[str, Any], list[tuple[int, str, str]]]] = {}
    for n in compress(nodes, map(_KINDS.get, map(_NAME, nodes))):
        if n.get("kind") != "function":
            continue
        p = pass_of.get(str(n["id"]))
        out = n.get("output") or []
        key = out[0].get("key") if out and isinstance(out[0], Mapping) else None
        if p is None or key is None:
            continue
        kind = _KINDS[n["name"]]
        ident = (n.get("module"), kind, n.get("line"))
        if ident not in layers:
            layers[ident] = ({"module": n.get("module"), "kind": kind, "line": n.get("line")}, [])
        layers[ident][1].append((p, str(n["id"]), str(key)))
    found = []
    for layer, entries in layers.values():
        block = gather([key for _, _, key in entries])
        if isinstance(block, np.ndarray) and block.shape[0] == len(entries):
            rows = block.reshape(len(entries), -1)
            hits, sizes = _row_hits(layer["kind"], rows), [rows.shape[1]] * len(entries)
        else:  # outputs of several shapes or dtypes: each read as it is
            ys = [read(key) for _, _, key in entries]
            entries = [e for e, y in zip(entries, ys, strict=True) if y is not None]
            arrays = [np.asarray(y) for y in ys if y is not None]
            hits, sizes = _hits(layer["kind"], arrays), [int(y.size) for y in arrays]
        if not entries:
            continue
        passes: list[int] = []
        ids: list[str] = []
        hit: list[int] = []
        size: list[int] = []
        for (p, nid, _), h, m in zip(entries, hits, sizes, strict=True):
            if not passes or passes[-1] != p:  # more calls in one iteration add to one share
                passes.append(p)
                ids.append(nid)
                hit.append(0)
                size.append(0)
            hit[-1] += h
            size[-1] += m
        layer.update(passes=passes, nodes=ids, share=[h / m if m else None for h, m in zip(hit, size, strict=True)])
        found.append(layer)
    return found


def _row_hits(kind: str, rows: np.ndarray) -> list[int]:
    """How many of each row's elements are saturated or dead (each element compared as in
    :func:`_hits`)."""
    y = rows.astype(np.float64, copy=False)
    if kind == "tanh":
        hit = np.abs(y) > SATURATION
    elif kind == "sigmoid":
        hit = np.abs(2.0 * y - 1.0) > SATURATION
    else:
        hit = y == 0
    out: list[int] = np.count_nonzero(hit, axis=1).tolist()
    return out
