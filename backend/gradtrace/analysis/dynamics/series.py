"""The series by iteration of one run (``Analysis.dynamics``): per parameter its gradient's
norm, mean and max |grad| and the log10 of its update:data ratio; per activation layer its
saturated or dead share; the loss. One value per backward pass (an iteration), null where a
series has none. The series by call (``calls.py``) join them.

NOTE [dynamics from the recorded numbers]
    Everything here is read, never recomputed from a model: ‖grad‖ is the norm of the leaf's
    ``grad_history`` entry (the ``.grad`` after that pass's accumulation, what ``p.grad``
    holds when the optimizer steps); mean and max |grad| come from that entry's tensor in the
    tensor file (max from the stats when it was not kept); the update ratio from the leaf's
    ``value_steps`` (NOTE [a leaf's value around each step] in capture/valuesteps.py), each
    step placed at the iteration whose gradient it applied; the shares from the activations'
    kept outputs (NOTE [saturated and dead] in ``layers.py``). A run with fewer than two
    backward passes has no series by iteration (there is no trend to draw), only its series
    by call where it has some (NOTE [the gradient at each call] in ``calls.py``); its
    layer-to-layer gradient-flow hint reads the document directly (``analysis/hints/flow.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.dynamics.calls import call_series
from gradtrace.analysis.dynamics.layers import SATURATION, activation_layers
from gradtrace.analysis.numbers import flat, number

Tensors = Callable[[str], Any]
"""A tensor of the run's tensor file by key (an array-like numpy reads), or None."""


def _out(x: float | None) -> Any:
    """A number as the document writes it (NaN and ±inf as strings), 7 significant digits."""
    if x is None:
        return None
    if x - x == 0:  # finite (the usual case, tested in one operation: it runs for every value)
        return float(f"{x:.7g}")
    if math.isnan(x):
        return "nan"
    return "inf" if x > 0 else "-inf"


def _reader(tensors: Tensors | None) -> Callable[[str], np.ndarray | None]:
    def read(key: str) -> np.ndarray | None:
        if tensors is None:
            return None
        try:
            t = tensors(key)
            if t is None or isinstance(t, np.ndarray):
                return t
            to_numpy = getattr(t, "numpy", None)  # a torch tensor: what np.asarray would call
            return np.asarray(t) if to_numpy is None else to_numpy()
        except Exception:  # a dtype numpy has no code for (bfloat16): the stats stand
            return None
    return read


def module_of(name: str | None) -> str | None:
    """The module path of a parameter's name (`model.0` of `model.0.weight`), or None."""
    if not name or "." not in name:
        return None
    return name.rsplit(".", 1)[0]


def _loss(view: DocView, passes: list[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for p in passes:
        roots = p.get("roots") or []
        tv = view.by_id.get(str(roots[0]), {}).get("value") if roots else None
        vals = flat(tv) if tv else None
        if vals is None and tv and math.prod(tv.get("shape") or []) == 1:  # its values past the budget:
            mean = number((tv.get("stats") or {}).get("mean"))  # a scalar's mean is itself
            vals = None if mean is None else [mean]
        out.append(_out(vals[0]) if vals is not None and len(vals) == 1 else None)
    return out


def _abs_mean_max(kept: list[tuple[int, np.ndarray]]) -> list[tuple[int, float, float]]:
    """Mean and max |grad| of each kept ``.grad`` (mean summed in float64): the entries of one
    shape and dtype (a parameter's, the usual case) in one stack and two reductions."""
    out: list[tuple[int, float, float]] = []
    groups: dict[tuple[Any, ...], list[tuple[int, np.ndarray]]] = {}
    for i, y in kept:
        groups.setdefault((y.shape, y.dtype), []).append((i, y))
    for group in groups.values():
        a = np.abs(np.stack([y for _, y in group]).reshape(len(group), -1))
        means = (np.add.reduce(a, axis=1, dtype=np.float64) / a.shape[1]).tolist()
        tops = a.max(axis=1).astype(np.float64).tolist()
        out += [(i, m, t) for (i, _), m, t in zip(group, means, tops, strict=True)]
    return out


def _outs(xs: list[float | None]) -> list[Any]:
    """:func:`_out` of each of ``xs``, a finite one inline (a series' values, the usual case)."""
    return [None if x is None else float(f"{x:.7g}") if x - x == 0 else _out(x) for x in xs]


Many = Callable[[list[str]], Any]
"""The tensors of many keys as one array, or None (``many`` in analysis/dynamics/read.py)."""


def _block(history: list[Any], at_pass: list[int], n: int, norm: list[float | None],
           many: Many) -> list[tuple[int, float, float]] | None:
    """Every gradient of ``history`` kept and read in one block (NOTE [a leaf's gradients in
    one read]): each one's place, mean and max |grad|, its norms written into ``norm``; else
    None, and nothing written."""
    places: list[int] = []
    keys: list[str] = []
    norms: list[Any] = []
    for h, tv in enumerate(history):
        i = at_pass[h]
        if not 0 <= i < n or not tv:
            continue
        key = tv.get("key")
        if not key:
            return None
        places.append(i)
        keys.append(str(key))
        norms.append((tv.get("stats") or {}).get("norm"))
    if not keys:
        return None
    y = many(keys)
    if not isinstance(y, np.ndarray) or not y.size:
        return None
    for i, v in zip(places, norms, strict=True):
        norm[i] = v if type(v) is float else number(v)
    a = np.abs(y.reshape(len(keys), -1), dtype=np.float64)  # |grad| in float64: the mean summed there
    means = (a.sum(axis=1) / a.shape[1]).tolist()
    tops = a.max(axis=1).tolist()
    return list(zip(places, means, tops, strict=True))


def _param(view: DocView, leaf: Mapping[str, Any], acc_passes: list[int], n: int,
           read: Callable[[str], np.ndarray | None], many: Many | None) -> dict[str, Any]:
    """One parameter's series: its raw values first, each written as the document writes it
    in one pass at the end (:func:`_outs`).

    NOTE [a leaf's gradients in one read]
        A leaf's kept gradients (``n{id}.gh{k}``) share its shape and dtype, and the tensor
        file lays them one after another: where the reader can (``many``, analysis/dynamics/
        read.py), they are read as one array, one row per gradient, and their mean and max
        |grad| reduced row by row, as the rows read one at a time and stacked would be."""
    norm: list[float | None] = [None] * n
    mean: list[float | None] = [None] * n
    top: list[float | None] = [None] * n
    upd: list[float | None] = [None] * n
    history = leaf.get("grad_history") or []
    at_pass = [acc_passes[h] if h < len(acc_passes) else h for h in range(len(history))]
    kept: list[tuple[int, np.ndarray]] = []
    block = _block(history, at_pass, n, norm, many) if many is not None and len(history) > 1 else None
    for h, tv in enumerate(history if block is None else ()):
        i = at_pass[h]
        if not 0 <= i < n or not tv:
            continue
        stats = tv.get("stats") or {}
        v = stats.get("norm")
        norm[i] = v if type(v) is float else number(v)
        key = tv.get("key")
        y = read(str(key)) if key else None
        if y is not None and y.size:
            kept.append((i, y))
        else:
            lo, hi = number(stats.get("min")), number(stats.get("max"))
            top[i] = max(abs(lo), abs(hi)) if lo is not None and hi is not None else None
    for i, m, t in _abs_mean_max(kept) if block is None else block:  # type: ignore[union-attr]
        mean[i], top[i] = m, t
    for s in leaf.get("value_steps") or []:
        h = int(s["at"]) - 1
        if not 0 <= h < len(at_pass) or not 0 <= at_pass[h] < n:
            continue
        w, d = s.get("norm"), s.get("delta")
        if type(w) is not float or type(d) is not float:  # a float, as written (the usual case)
            w, d = number(w), number(d)
        if w is None or d is None:
            continue
        ratio = d / w if w else math.inf
        upd[at_pass[h]] = math.log10(ratio) if ratio > 0 else -math.inf
    name = leaf.get("name")
    return {"node": str(leaf["id"]), "name": name, "module": module_of(name), "grad_norm": _outs(norm),
            "grad_mean": _outs(mean), "grad_max": _outs(top), "update": _outs(upd)}


def network_order(view: DocView, leaves: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Leaves in the order the forward pass used them: their first consumer's place among the
    nodes (the graph's nodes are in creation order)."""
    place = {str(n["id"]): i for i, n in enumerate(view.nodes)}

    def rank(leaf: Mapping[str, Any]) -> int:
        users = [place.get(c, len(place)) for c in view.consumers.get(str(leaf["id"]), [])
                 if view.name(c) != "AccumulateGrad"]
        acc = view.accumulator(str(leaf["id"]))
        if acc is not None:
            users += [place.get(c, len(place)) for c in view.consumers.get(acc, [])]
        return min(users, default=place.get(str(leaf["id"]), len(place)))
    return sorted(leaves, key=rank)


def dynamics(view: DocView, tensors: Tensors | None = None) -> dict[str, Any] | None:
    """The run's series by iteration (NOTE [dynamics from the recorded numbers]) and by call
    (NOTE [the gradient at each call] in ``calls.py``), or None when it has neither: fewer than
    two backward passes, or no leaf got a gradient in two of them, and no module walked many
    times in one pass. With one pass, the series by iteration are left empty."""
    passes = [p for p in (view.doc.get("passes") or []) if p.get("within") is None]
    if not passes:
        return None
    read = _reader(tensors)
    calls = call_series(view, passes, read, getattr(tensors, "gather", None)) if tensors is not None else []
    by_iteration = (_by_iteration(view, passes, read, getattr(tensors, "many", None), getattr(tensors, "gather", None))
                    if len(passes) >= 2 else None)
    if by_iteration is None and not calls:
        return None
    out = by_iteration or {"threshold": SATURATION, "iterations": [int(p["index"]) for p in passes],
                           "loss": _loss(view, passes), "params": [], "layers": []}
    if calls:
        out["calls"] = calls
    return out


def _by_iteration(view: DocView, passes: list[Mapping[str, Any]], read: Callable[[str], np.ndarray | None],
                  many: Many | None, gather: Many | None = None) -> dict[str, Any] | None:
    n = len(passes)
    index = {int(p["index"]): i for i, p in enumerate(passes)}
    pass_of: dict[str, int] = {}
    acc_passes: dict[str, list[int]] = {}
    accumulators = {str(n["id"]) for n in view.named("AccumulateGrad")}
    for _, ev in view.backward_events():
        p = index.get(ev.get("pass"))  # type: ignore[arg-type]
        if p is None:
            continue
        node = str(ev["node"])
        pass_of.setdefault(node, p)
        if node in accumulators:
            acc_passes.setdefault(node, []).append(p)
    # the leaves trained over iterations: a gradient in two passes or more (a tensor made
    # afresh each iteration and given one, a WGAN's interpolated batch, is data, not a layer)
    leaves = [t for t in view.nodes if t.get("kind") == "tensor" and t.get("role") == "leaf"
              and len(t.get("grad_history") or ()) >= 2]
    if not leaves:
        return None  # no leaf was trained over iterations (a double backward, two losses once)
    params = [_param(view, t, acc_passes.get(view.accumulator(str(t["id"])) or "", []), n, read, many)
              for t in network_order(view, leaves)]
    layers = []
    for layer in activation_layers(view.nodes, pass_of, read, gather):
        share: list[Any] = [None] * n
        nodes: list[str | None] = [None] * n
        for p, nid, s in zip(layer["passes"], layer["nodes"], layer["share"], strict=True):
            share[p], nodes[p] = _out(s), nid
        layers.append({"module": layer["module"], "kind": layer["kind"], "line": layer["line"],
                       "nodes": nodes, "share": share})
    return {"threshold": SATURATION, "iterations": [int(p["index"]) for p in passes],
            "loss": _loss(view, passes), "params": params, "layers": layers}
