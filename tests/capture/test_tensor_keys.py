"""Each kept tensor's key lands on the TensorValue it names (NOTE [keys spliced into the core's
JSON] in capture/keysplice.py): event gradients, hook changes, AccumulateGrad's ``grad``, a
node's outputs (several of them), a leaf's history, edits and end, on both kernel sets; the
document stays canonical JSON, and every key it names is in the file; the file's other keys
are saved tensors no node made (NOTE [saved tensors from no node] in capture/saved.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import torch
from safetensors.numpy import load

import gradtrace
from gradtrace.analysis.kept import saved_key
from gradtrace.capture.keysplice import EventsText, GraphText, keyed
from gradtrace.schema.canonical import canonical_json

PROGRAM = """
import torch
w = torch.randn(4, 3, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
x = torch.randn(5, 4)
for step in range(2):
    h = x @ w + b
    h.register_hook(lambda g: g * 2)
    top, idx = h.max(dim=1)
    left, right = torch.split(h, [1, 2], dim=1)
    loss = top.sum() + (right ** 2).mean() + left.tanh().sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_([w], 0.1)
    with torch.no_grad():
        w -= 0.1 * w.grad
"""


def _keys(o: Any, at: str, out: dict[str, str]) -> None:
    """Every ``key`` in the parsed document, by where it sits."""
    if isinstance(o, dict):
        if isinstance(o.get("key"), str) and "dtype" in o:
            out[at] = o["key"]
        for k, v in o.items():
            _keys(v, f"{at}.{k}", out)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            _keys(v, f"{at}[{i}]", out)


def _expected(doc: dict[str, Any]) -> dict[str, str]:
    """The key each place must carry when its tensor is kept (docs/CONTRACT.md, "The tensor file")."""
    want: dict[str, str] = {}
    for n, node in enumerate(doc["graph"]["nodes"]):
        nid, at = node["id"], f"graph.nodes[{n}]"
        for k in range(len(node.get("output") or [])):
            want[f"{at}.output[{k}]"] = f"{nid}.out{k}"
        want[f"{at}.value"] = f"{nid}.value"
        want[f"{at}.value_end"] = f"{nid}.end"
        for h in range(len(node.get("grad_history") or [])):
            want[f"{at}.grad_history[{h}]"] = f"{nid}.gh{h}"
        for j in range(len(node.get("grad_edits") or [])):
            want[f"{at}.grad_edits[{j}].value"] = f"{nid}.ge{j}"
    for i, ev in enumerate(doc["events"]):
        for k in range(len(ev.get("grad_outputs") or [])):
            want[f"events[{i}].grad_outputs[{k}]"] = f"e{i}.go{k}"
        for k in range(len(ev.get("grad_inputs") or [])):
            want[f"events[{i}].grad_inputs[{k}]"] = f"e{i}.gi{k}"
        want[f"events[{i}].grad"] = f"e{i}.grad"
        for k in range(len(ev.get("hook_changes") or [])):
            want[f"events[{i}].hook_changes[{k}].before"] = f"e{i}.hb{k}"
            want[f"events[{i}].hook_changes[{k}].after"] = f"e{i}.ha{k}"
    return want


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_every_key_sits_where_the_contract_puts_it(native: bool) -> None:
    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    with gradtrace.record(native=native, _filename="<snippet>", _namespace=ns, _fresh=True) as rec:
        exec(compile(PROGRAM, "<snippet>", "exec"), ns)
    text = rec.document().canonical_json()
    doc = orjson.loads(text)
    assert canonical_json(doc) == text  # the spliced bytes are canonical JSON still
    found: dict[str, str] = {}
    _keys({"graph": doc["graph"], "events": doc["events"]}, "", found)
    found = {k.lstrip("."): v for k, v in found.items()}
    want = _expected(doc)
    assert found and all(want.get(at) == key for at, key in found.items()), \
        [(at, key, want.get(at)) for at, key in found.items() if want.get(at) != key][:5]
    kinds = {key.split(".")[1].rstrip("0123456789") for key in found.values()}
    assert {"out", "value", "end", "gh", "ge", "go", "gi", "grad", "hb", "ha"} <= kinds
    assert any(len(n.get("output") or []) > 1 for n in doc["graph"]["nodes"])  # max, split
    data = rec.document().tensor_bytes()
    assert data is not None
    # the rest of the file: saved tensors no node made (``x``, read by mm), named by their entry
    saved = {saved_key(n["id"], s["name"]) for n in doc["graph"]["nodes"] for s in n["saved"]}
    rest = set(load(data)) - set(found.values())
    assert rest and rest <= saved


def test_a_count_that_differs_is_an_error_not_a_guess() -> None:
    events = b'[{"changed_by_hook":false,"grad":null,"grad_inputs":[{"dtype":"float32","shape":[]}],' \
             b'"grad_outputs":[null],"line":1,"node":"n3","pass":0,"phase":"backward"}]'
    assert EventsText(events, [(0, [-1], [7], -1, [])]).slot(0, "gi0") is not None
    with pytest.raises(RuntimeError, match="TensorValues"):
        EventsText(events, [(0, [5], [7], -1, [])])
    with pytest.raises(RuntimeError, match="nodes"):
        GraphText(b'{"edges":[],"nodes":[]}', [None])
    assert keyed(b'{"dtype":"float32","shape":[]}', "e0.gi0") == b'{"dtype":"float32","key":"e0.gi0","shape":[]}'
