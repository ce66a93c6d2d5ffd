"""A run's tensor file, end to end: ``POST /api/runs`` over real uvicorn and the real sandbox
keeps the file beside the document, ``/tensors`` lists the keys the document names, and a Range
read of a kept gradient gives the bits ``gradtrace.record()`` keeps in process for the same code
and seed. A share of the run serves the same file."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import torch

import gradtrace
from gradtrace.analysis.kept import saved_key
from gradtrace.storage.tensor_rows import tensor_sha256

SEED = 11
MLP = """\
net = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(5, 4)
loss = F.mse_loss(net(x), torch.zeros(5, 2))
loss.backward()
opt.step()
"""
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BOOL": np.bool_}


def named_keys(doc: dict[str, Any]) -> set[str]:
    """Every ``key`` the document gives a TensorValue, wherever it sits."""
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if isinstance(x.get("key"), str) and "shape" in x:
                found.add(x["key"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return found


def in_process(code: str, seed: int) -> Any:
    """The document ``gradtrace.record()`` makes of ``code`` here, seeded as the service seeds."""
    torch.manual_seed(seed)
    namespace = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional}
    with gradtrace.record() as rec:
        exec(compile(code, "<snippet>", "exec"), namespace)
    return rec.document()


def a_weight_gradient(doc: dict[str, Any]) -> str:
    """The key of the first leaf's first ``.grad`` the document names (a Linear's weight)."""
    for node in doc["graph"]["nodes"]:
        for entry in node.get("grad_history") or []:
            if entry.get("key"):
                return str(entry["key"])
    raise AssertionError("no leaf's gradient was kept")


def read_range(client: httpx.Client, url: str, entry: dict[str, Any]) -> np.ndarray:
    r = client.get(url, headers={"Range": f"bytes={entry['start']}-{entry['end'] - 1}"})
    assert r.status_code == 206, r.text
    return np.frombuffer(r.content, dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])


def check_run_tensors(client: httpx.Client, base: str, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The index under ``base`` lists exactly the keys ``doc`` names, and saved tensors no node
    made (``n{id}.s{name}``: NOTE [saved tensors from no node] in capture/saved.py), in a file
    ``doc`` names."""
    index = client.get(f"{base}/tensors")
    assert index.status_code == 200, index.text
    got = index.json()
    assert (got["sha256"], got["bytes"]) == (doc["tensors"]["sha256"], doc["tensors"]["bytes"])
    keys, named = {t["key"] for t in got["tensors"]}, named_keys(doc)
    saved = {saved_key(n["id"], s["name"]) for n in doc["graph"]["nodes"] for s in n.get("saved") or []}
    assert named <= keys and keys - named <= saved, sorted(keys ^ named)[:5]
    assert len(got["tensors"]) == doc["tensors"]["count"]
    return {t["key"]: t for t in got["tensors"]}


def test_a_run_keeps_its_tensor_file_and_a_kept_gradient_is_what_record_keeps(api: httpx.Client) -> None:
    r = api.post("/api/runs", json={"code": MLP, "seed": SEED})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "ok", doc.get("error")
    assert doc["tensors"]["count"] > 0 and doc["tensors"]["left_out_count"] == 0
    entries = check_run_tensors(api, f"/api/runs/{doc['id']}", doc)
    key = a_weight_gradient(doc)
    served = read_range(api, f"/api/runs/{doc['id']}/tensors.safetensors", entries[key])
    mine = in_process(MLP, SEED).tensor(key)
    # Same machine and kernels, a model too small for threads: the same bits.
    assert torch.equal(torch.from_numpy(served.copy()), mine), (served, mine)
    whole = api.get(f"/api/runs/{doc['id']}/tensors.safetensors")
    assert tensor_sha256(whole.content) == doc["tensors"]["sha256"]

    share = api.post("/api/shares", json={"run_id": doc["id"]})
    assert share.status_code in (200, 201), share.text
    base = f"/api/shares/{share.json()['id']}"
    shared = check_run_tensors(api, base, doc)
    assert shared == entries
    again = api.get(f"{base}/tensors.safetensors")
    assert again.status_code == 200 and again.content == whole.content

    # a copy of the document the page changed (a checked exercise adds its goals) is posted
    # whole: the share keeps the file the document names, the run's
    edited = {**doc, "message": "shared with an edit"}
    posted = api.post("/api/shares", json={"document": edited})
    assert posted.status_code == 201, posted.text
    copy = api.get(f"/api/shares/{posted.json()['id']}/tensors.safetensors")
    assert copy.status_code == 200 and copy.content == whole.content
    # a document naming a file the service never stored keeps no file, and says so
    other = {**edited, "tensors": {**doc["tensors"], "sha256": "0" * 64}}
    alone = api.post("/api/shares", json={"document": other})
    assert alone.status_code == 201, alone.text
    assert api.get(f"/api/shares/{alone.json()['id']}/tensors").status_code == 404


def test_a_run_stopped_by_its_time_limit_keeps_what_it_recorded(start_server: Any) -> None:
    """NOTE [a stopped run keeps its tensors] in gradtrace/sandbox/kinds/run.py."""
    code = MLP + "while True:\n    net(x).sum().backward()\n"
    with start_server({"GRADTRACE_TIMEOUT_S": "1.5", "GRADTRACE_CPU_S": "30"}) as srv, srv.client() as client:
        r = client.post("/api/runs", json={"code": code, "seed": SEED}, timeout=60)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["status"] in ("timeout", "graph_limit"), doc["status"]
        if "tensors" not in doc:  # ended before it could hand in its graph: nothing to serve
            assert client.get(f"/api/runs/{doc['id']}/tensors").status_code == 404
            return
        entries = check_run_tensors(client, f"/api/runs/{doc['id']}", doc)
        assert entries, "a run stopped with a graph keeps the tensors it had"
