"""``rec.document()`` builds its graph and events on first use (NOTE [a document built on first
use] in ``gradtrace/notebook/run.py``), and is then the document an eager validation gives."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

import gradtrace
from gradtrace.capture import native
from gradtrace.schema import Node, RunDocument
from gradtrace.schema.canonical import canonical_json, canonical_with_id
from gradtrace.schema.views import View
from rundoc import captured_of


def _recorded() -> gradtrace.record:
    with gradtrace.record() as rec:
        w = torch.tensor([0.5, -1.0, 1e-6], requires_grad=True)
        lin = torch.nn.Linear(3, 2)
        loss = torch.tanh(lin(w * 3)).sum()
        loss.backward()
    return rec


def _eager(rec: gradtrace.record) -> RunDocument:
    _, body = captured_of(rec).canonical_with_id()
    return RunDocument.model_validate_json(body)


@pytest.fixture(autouse=True)
def _core() -> None:
    assert native.available(), "the C++ capture core is missing: make native"


def test_the_graph_and_events_wait_until_read_and_then_are_the_eager_ones() -> None:
    rec = _recorded()
    doc = rec.document()
    assert "graph" not in doc.__dict__ and "events" not in doc.__dict__  # not built yet
    assert doc.id == _eager(rec).id and doc.status == "ok"
    nodes = doc.graph.nodes  # read-only views of the JSON (NOTE [views of the document's JSON])
    assert "graph" not in doc.__dict__ and "events" not in doc.__dict__
    assert all(isinstance(n, View) for n in nodes) and doc.graph.nodes is nodes  # parsed once
    eager = _eager(rec)
    assert [n.model_dump() for n in nodes] == [n.model_dump() for n in eager.graph.nodes]
    assert doc.events == eager.events
    with pytest.raises(AttributeError, match="read-only"):
        nodes[0].name = "x"
    assert doc.validated() is doc and "graph" in doc.__dict__ and "events" in doc.__dict__
    assert isinstance(doc.graph.nodes[0], Node) and doc.graph == eager.graph
    assert doc.model_dump(mode="json", by_alias=True) == eager.model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize("how", ["model_dump", "model_dump_json", "eq", "repr", "copy", "deepcopy", "pickle",
                                 "canonical", "iter", "set"])
def test_every_way_of_reading_the_document_sees_all_of_it(how: str) -> None:
    rec = _recorded()
    doc, eager = rec.document(), _eager(rec)
    want = eager.model_dump(mode="json", by_alias=True)
    if how == "model_dump":
        assert doc.model_dump(mode="json", by_alias=True) == want
    elif how == "model_dump_json":
        assert doc.model_dump_json(by_alias=True) == eager.model_dump_json(by_alias=True)
    elif how == "eq":
        assert RunDocument.model_validate(want) == RunDocument.model_validate(doc.model_dump(by_alias=True))
        again = rec.document()
        assert doc == again
    elif how == "repr":
        assert "MulBackward0" in repr(doc)
    elif how == "copy":
        assert copy.copy(doc).graph == eager.graph
    elif how == "deepcopy":
        assert copy.deepcopy(doc).model_dump(mode="json", by_alias=True) == want
    elif how == "pickle":
        assert pickle.loads(pickle.dumps(doc)).model_dump(mode="json", by_alias=True) == want
    elif how == "canonical":
        doc_id, body = canonical_with_id(doc.model_dump(mode="json", by_alias=True))
        assert doc_id == doc.id and body == canonical_json(want)
    elif how == "iter":
        assert dict(doc)["graph"] == eager.graph
    elif how == "set":
        doc.events = []
        assert doc.events == [] and doc.graph == eager.graph
        assert doc.model_dump(by_alias=True)["events"] == []
