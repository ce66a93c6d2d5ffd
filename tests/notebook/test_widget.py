"""The widget's Python side, the static picture and the fallback without anywidget."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import gradtrace
from gradtrace.notebook.picture import MAX_NODES, graph_svg
from gradtrace.notebook.widget import GradtraceWidget
from gradtrace.schema import canonical_json
from rundoc import record_doc


def _recorded() -> gradtrace.record:
    with gradtrace.record() as rec:
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward()
    return rec


def test_show_sends_the_document_compressed_and_answers_tensors(widget_bundles: Path) -> None:
    rec = _recorded()
    w = gradtrace.show(rec)
    assert isinstance(w, GradtraceWidget)
    doc = json.loads(gzip.decompress(w._doc))
    assert gzip.decompress(w._doc) == canonical_json(w.document)
    assert [n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "tensor"] == ["x", "y"]
    assert "y = (x * x).sum()" in (doc["code"] or ""), "the code pane gets the block's source"
    assert w.selected is None and w.step == -1
    w.selected = "x"  # by name; the view follows (the front end watches _selected)
    sel = w.selected
    assert sel is not None and sel.name == "x" and sel.kind == "tensor"
    torch.testing.assert_close(sel.grad, torch.tensor([2.0, -4.0]))
    w.selected = "MulBackward0"
    sel = w.selected
    assert sel is not None and sel.kind == "function"
    torch.testing.assert_close(sel.grad, torch.tensor([1.0, 1.0]), msg="the gradient flowing into the node")
    with pytest.raises(KeyError, match="no node"):
        w.selected = "nope"
    w.step = 2
    assert w.step == 2


def test_documents_from_the_client_show_as_the_widget(widget_bundles: Path) -> None:
    from gradtrace.client import ClientRunDocument

    doc = ClientRunDocument.model_validate(record_doc(_recorded()))
    doc._base_url = "http://127.0.0.1:8000"
    bundle = doc._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert f'href="http://127.0.0.1:8000/r/{doc.id}"' in bundle["text/html"], "the fallback links to the run's page"


def test_show_refuses_what_is_not_a_run() -> None:
    with pytest.raises(TypeError, match="RunDocument"):
        gradtrace.show(42)


def test_the_picture_draws_every_node_and_edge() -> None:
    doc = record_doc(_recorded())
    svg = graph_svg(doc)
    assert svg.count("<rect") == len(doc["graph"]["nodes"])
    assert svg.count("<line") == len(doc["graph"]["edges"])
    nodes = [{"id": f"n{i}", "kind": "function", "name": "AddBackward0"} for i in range(MAX_NODES + 5)]
    big = {"graph": {"nodes": nodes, "edges": []}}
    assert "and 5 more nodes" in graph_svg(big)


def test_without_anywidget_show_draws_a_picture_and_says_so_once() -> None:
    code = (
        "import sys; sys.modules['anywidget'] = None\n"  # an install without the notebook extra
        "import torch, gradtrace\n"
        "with gradtrace.record() as rec:\n"
        "    (torch.ones(2, requires_grad=True) * 2).sum().backward()\n"
        "a = gradtrace.show(rec); b = gradtrace.show(rec)\n"
        "html = a._repr_html_()\n"
        "print(type(a).__name__, '<svg' in html, 'MulBackward0' in html)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["StaticRun", "True", "True"]
    assert out.stderr.count("anywidget is not installed") == 1, out.stderr


def test_showing_a_document_sends_what_capture_wrote_without_building_its_models() -> None:
    """NOTE [a document built on first use]: a widget of ``rec.document()`` sends the same bytes
    as the fully built document would, without building its graph and events as models."""
    from gradtrace.notebook.documents import as_document, compressed
    from gradtrace.schema import document_id

    cell = torch.nn.GRUCell(4, 8)
    with gradtrace.record() as rec:
        h = torch.zeros(1, 8)
        for _ in range(5):
            h = cell(torch.randn(1, 4), h)
        h.sum().backward()
    doc = rec.document()
    shown = as_document(doc)
    assert doc._lazy == {"graph": doc._lazy["graph"], "events": doc._lazy["events"]}  # still JSON
    built = doc.model_dump(mode="json", by_alias=True)  # builds the models
    assert shown == built and document_id(shown) == doc.id
    assert gzip.decompress(compressed(shown)) == canonical_json(built)
    shown["stdout"] = "changed"  # the carried bytes are used only while they are the document's
    assert json.loads(gzip.decompress(compressed(shown)))["stdout"] == "changed"


def test_the_widget_checks_a_node_and_its_button_asks_python(widget_bundles: Path) -> None:
    from gradcheck.cube import WRONG_CUBE
    from gradtrace.gradcheck.notebook import enable_checks
    from rundoc import run_doc

    w = GradtraceWidget(run_doc(WRONG_CUBE, seed=0))
    w._on_msg(w, {"type": "check", "node": "n0"}, [])  # no checker yet: a clear answer, no crash
    assert w._check is not None and w._check["status"] == "refused" and "enable_checks" in w._check["message"]
    enable_checks(w)
    result = w.check("x")
    assert result.verdict == "fail" and result.suspect is not None
    cube = next(n["id"] for n in w.document["graph"]["nodes"] if n["name"] == "CubeBackward")
    assert result.suspect.node_id == cube and w._check["verdict"] == "fail"
    w._check = None
    w._on_msg(w, {"type": "check", "node": cube}, [])  # what the inspector's button sends
    assert w._check is not None and w._check["verdict"] == "fail"
    w._on_msg(w, {"type": "check", "node": "n-none"}, [])
    assert w._check["status"] == "refused" and "no node" in w._check["message"]


def test_the_widget_and_the_document_explain_a_node_from_python(widget_bundles: Path) -> None:
    """The widget's explain panel asks its kernel ({type: "explain"}), which answers through
    _explain with the request's number; w.explain() and doc.explain() answer from Python."""
    with gradtrace.record() as rec:
        x = torch.tensor([1.5, -2.0], requires_grad=True)
        (x ** 3).sum().backward()
    doc = rec.document()
    first = doc.explain("PowBackward0")
    assert first["inputs"][0]["instance"] == "1 · 3 · 1.5^2 = 6.75"
    assert doc.explain("PowBackward0", index=[1])["inputs"][0]["instance"] == "1 · 3 · (-2)^2 = 12"
    w = GradtraceWidget(doc)
    pow_id = next(n["id"] for n in w.document["graph"]["nodes"] if n["name"] == "PowBackward0")
    assert w.explain("PowBackward0") == first == w.explain(pow_id)
    w._on_msg(w, {"type": "explain", "node": pow_id, "index": [1], "seq": 7}, [])
    assert w._explain == {"seq": 7, "answer": doc.explain(pow_id, index=[1])}
    w._on_msg(w, {"type": "explain", "node": pow_id, "index": ["bad"], "seq": 8}, [])  # bad index: the first
    assert w._explain is not None and w._explain["answer"]["inputs"][0]["index"] == [0]
    w._on_msg(w, {"type": "explain", "node": "n-none", "seq": 9}, [])
    assert w._explain["seq"] == 9 and "no node" in w._explain["error"]


def test_the_widget_answers_a_tensor_by_key_with_its_raw_bytes(widget_bundles: Path) -> None:
    """The inspector asks the kernel for one tensor ({type: "tensor", key, seq}); the answer is
    its dtype and shape with the tensor's bytes as the message's one buffer (NOTE [tensors
    through the comm] in notebook/widget.py). What goes out is taken where the comm would send
    it; the JupyterLab test (test_jupyterlab.py) sees it drawn."""
    sent: list[tuple[dict, list]] = []

    class Seen(GradtraceWidget):  # type: ignore[misc]
        def send(self, content: dict, buffers: list | None = None) -> None:
            sent.append((content, buffers or []))

    with gradtrace.record() as rec:
        x = torch.randn(5, 7, requires_grad=True)
        (x.to(torch.bfloat16).tanh().float() * 2).sum().backward()
    doc = rec.document()
    for w in (Seen(doc), Seen(rec)):  # a document, or the record block itself
        sent.clear()
        node = next(n for n in w.document["graph"]["nodes"] if n["name"] == "TanhBackward0")
        key = node["output"][0]["key"]
        w._on_msg(w, {"type": "tensor", "key": key, "seq": 3}, [])
        (content, buffers), = sent
        assert content == {"type": "tensor", "seq": 3, "key": key, "dtype": "BF16", "shape": [5, 7]}
        assert bytes(buffers[0]) == doc.tensor(key).contiguous().view(torch.int16).numpy().tobytes()
        w._on_msg(w, {"type": "tensor", "key": "n999.out0", "seq": 4}, [])
        assert sent[-1][0]["seq"] == 4 and "no such tensor" in sent[-1][0]["error"]
        w._on_msg(w, {"type": "tensor", "key": 5, "seq": 5}, [])
        assert "by its key" in sent[-1][0]["error"]
    bare = Seen(doc.as_json_dict())  # a dict alone: no tensor file
    sent.clear()
    bare._on_msg(bare, {"type": "tensor", "key": "n1.out0", "seq": 1}, [])
    assert "no tensor file" in sent[-1][0]["error"]
