"""``doc.dynamics``: the document's series by iteration and by call (``Analysis.dynamics``) as
plain rows, one per iteration (or call) and series, or a pandas DataFrame of them when pandas
is installed."""

from __future__ import annotations

from typing import Any

_NAN = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def _num(v: Any) -> float | None:
    if v is None:
        return None
    return _NAN.get(v, float("nan")) if isinstance(v, str) else float(v)


def rows(dynamics: Any) -> list[dict[str, Any]]:
    """One row per iteration of each series: ``{"iteration", "pass", "series", "name",
    "module", ...}``: ``series`` is ``param`` (``grad_norm``, ``grad_mean``, ``grad_max``,
    ``update_log10``), ``layer`` (``kind``, ``share``), ``loss`` (``loss``) or ``call`` (one row
    per call of an unrolled module: ``call``, from 0 as ``Node.module_stack`` counts, and
    ``grad_norm`` at its output)."""
    if dynamics is None:
        return []
    d = dynamics if isinstance(dynamics, dict) else dynamics.model_dump(mode="json", by_alias=True)
    out: list[dict[str, Any]] = []
    passes = d["iterations"]
    for i, p in enumerate(passes):
        out.append({"iteration": i, "pass": p, "series": "loss", "name": "loss", "module": None,
                    "loss": _num(d["loss"][i])})
    for s in d["params"]:
        for i, p in enumerate(passes):
            out.append({"iteration": i, "pass": p, "series": "param", "name": s["name"], "module": s["module"],
                        "node": s["node"], "grad_norm": _num(s["grad_norm"][i]),
                        "grad_mean": _num(s["grad_mean"][i]), "grad_max": _num(s["grad_max"][i]),
                        "update_log10": _num(s["update"][i])})
    for layer in d["layers"]:
        for i, p in enumerate(passes):
            out.append({"iteration": i, "pass": p, "series": "layer", "name": f"{layer['kind']}@{layer['line']}",
                        "module": layer["module"], "node": layer["nodes"][i], "kind": layer["kind"],
                        "share": _num(layer["share"][i])})
    position = {p: i for i, p in enumerate(passes)}
    for c in d.get("calls") or []:
        for call, node, g in zip(c["calls"], c["nodes"], c["grad_norm"], strict=True):
            out.append({"iteration": position.get(c["pass"]), "pass": c["pass"], "series": "call", "name": c["module"],
                        "module": c["module"], "node": node, "call": call, "grad_norm": _num(g)})
    return out


def table(dynamics: Any) -> Any:
    """:func:`rows`, as a pandas DataFrame when pandas is importable."""
    found = rows(dynamics)
    try:
        import pandas as pd
    except ImportError:
        return found
    return pd.DataFrame(found)
