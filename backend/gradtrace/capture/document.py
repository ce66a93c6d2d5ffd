"""Turn a :class:`~gradtrace.capture.recorder.Recorder` into a run document.

Values captured lazily are encoded here, in document order (nodes, then events), so the
values budget (NOTE [document size] in :mod:`gradtrace.capture.values`) is spent the same way
on every identical run.
"""

from __future__ import annotations

from typing import Any

import torch

from gradtrace.capture.frames import NameIndex
from gradtrace.capture.recorder import BackwardEvent, Recorder
from gradtrace.capture.values import encode
from gradtrace.schema import RunDocument, document_id


def _final_grad(t: torch.Tensor) -> dict[str, Any] | None:
    """``.grad`` at the end of the run, read only where autograd keeps one (no warning for
    non-leaf tensors)."""
    if not (t.is_leaf or t.retains_grad):
        return None
    g = t.grad
    return encode(g) if g is not None else None


def _nodes(rec: Recorder) -> list[dict[str, Any]]:
    resolve = rec.values.resolve
    tensors = {doc["id"]: t for t, doc in rec.tensors.values()}
    # Tensors get their variable only after the call that made them returns (`d = y.detach()`):
    # names still missing are looked up once more in the snippet's globals at the end.
    late = NameIndex(None, [rec.namespace]) if rec.namespace is not None else None
    out = []
    for doc in rec.nodes:
        d = dict(doc)
        if d["kind"] == "tensor":
            t = tensors[d["id"]]
            if d["name"] is None and late is not None:
                d["name"] = late.name_of(t)
            d["grad"] = _final_grad(t)
            if "value" in d:
                d["value"] = resolve(d["value"])
            if "grad_history" in d:
                d["grad_history"] = [resolve(h) for h in d["grad_history"]]
        else:
            d["saved"] = [{k: v for k, v in s.items() if k != "_param"} for s in d["saved"]]
        out.append(d)
    return out


def _events(rec: Recorder) -> list[dict[str, Any]]:
    resolve = rec.values.resolve
    out: list[dict[str, Any]] = []
    for ev in rec.events:
        if not isinstance(ev, BackwardEvent):
            out.append(dict(ev))
            continue
        d: dict[str, Any] = {"phase": "backward", "node": ev.node, "pass": ev.pass_, "line": ev.line,
                             "grad_outputs": [resolve(h) for h in ev.grad_outputs],
                             "grad_inputs": [resolve(h) for h in ev.grad_inputs],
                             "grad": resolve(ev.grad)}
        if ev.hook_changes:
            d["changed_by_hook"] = True
            d["hook_changes"] = [{"before": resolve(c["before"]), "after": resolve(c["after"])}
                                 for c in ev.hook_changes]
        out.append(d)
    return out


def _memory(rec: Recorder) -> dict[str, int]:
    """NOTE [graph memory]: each node's ``saved_bytes`` counts its saved tensors in full. The
    total counts activations and inputs per node and each parameter once (a parameter saved
    by several nodes is one tensor); ``freed`` counts what backward released, parameters
    excluded (releasing a reference to a parameter frees nothing)."""
    total = 0
    params: set[int] = set()
    for info in rec.fn_by_id.values():
        for s in info.doc["saved"]:
            p = s.get("_param")
            if p is not None:
                if id(p) in params:
                    continue
                params.add(id(p))
            total += s["bytes"]
    freed = sum(int(p.doc["freed_bytes"]) for p in rec.passes)
    return {"saved_bytes_total": total, "freed_bytes_total": freed}


def build_document(rec: Recorder, **fields: Any) -> RunDocument:
    """The validated run document, with its content id."""
    body: dict[str, Any] = {
        "schema_version": 1, "id": "", "torch_version": torch.__version__,
        "graph": {"nodes": _nodes(rec), "edges": [dict(e) for e in rec.edges]},
        "events": _events(rec), "passes": [dict(p.doc) for p in rec.passes],
        "memory": _memory(rec),
    }
    if rec.n_recorder_errors:
        body["recorder_errors"] = {"count": rec.n_recorder_errors, "first": rec.recorder_errors}
    body.update(fields)
    doc = RunDocument.model_validate(body)
    dumped = doc.model_dump(by_alias=True, mode="json")
    doc.id = document_id(dumped)
    return doc
