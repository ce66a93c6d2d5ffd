"""The read-only views ``rec.document()`` hands out for its graph and events (NOTE [views of the
document's JSON] in gradtrace/schema/views.py) expose exactly the models' fields, with the
values the validated models hold, on every lesson and the three real programs; and the id and
analysis computed on first read (NOTE [an id and an analysis on first use] in
gradtrace/notebook/run.py) are the eager ones, whichever is read first."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
import torch
from pydantic import BaseModel

import gradtrace
from gradtrace.lessons import all_lessons
from gradtrace.schema import RunDocument, TensorValue
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.views import VIEWS, View, view, view_class
from programs import ADAM_20, GRU_200, TRANSFORMER_6
from rundoc import captured_of

PROGRAMS = {**{lesson.stem: lesson.code for lesson in all_lessons()},
            "gru-200": GRU_200, "adam-20": ADAM_20, "transformer-6": TRANSFORMER_6}


def _recorded(name: str) -> gradtrace.record:
    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    # a lesson may end in the error it teaches; record() keeps it in the document
    with (contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()),
          gradtrace.record(_filename=f"<{name}>", _namespace=ns, _fresh=True) as rec):
        exec(compile(PROGRAMS[name], f"<{name}>", "exec"), ns)
    return rec


def _same(got: Any, want: Any, where: str) -> None:
    """``got`` (views) holds ``want`` (models): the same fields, the same values, the same types."""
    if isinstance(want, BaseModel):
        assert isinstance(got, View) and got.model is type(want), where
        assert list(type(got).model_fields) == list(type(want).model_fields), where
        for name in type(want).model_fields:
            _same(getattr(got, name), getattr(want, name), f"{where}.{name}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert type(got) is type(want) and got == want, (where, got, want)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_views_are_the_validated_models_and_the_late_id_and_analysis_the_eager_ones(name: str) -> None:
    rec = _recorded(name)
    doc = rec.document()
    assert "graph" not in doc.__dict__ and "id" not in doc.__dict__  # nothing built or hashed yet
    graph, events = doc.graph, doc.events  # views first, then the analysis reads their dicts
    eager = RunDocument.model_validate_json(captured_of(rec).canonical_with_id()[1])
    _same(graph, eager.graph, "graph")
    _same(events, eager.events, "events")
    assert (doc.id, doc.analysis) == (eager.id, eager.analysis)
    _same(doc.graph, eager.graph, "graph after the analysis")  # which read the views' dicts
    _same(doc.events, eager.events, "events after the analysis")
    assert doc.model_dump(mode="json", by_alias=True) == eager.model_dump(mode="json", by_alias=True)

    again = rec.document()  # the id first: the analysis parses the graph itself
    assert (again.id, again.analysis) == (eager.id, eager.analysis)
    assert again.canonical_json() == canonical_with_id(eager.model_dump(mode="json", by_alias=True))[1]


def test_every_model_has_its_view_and_a_view_is_read_only() -> None:
    for model, cls in VIEWS.items():
        assert view_class(model) is cls and cls.model_fields is model.model_fields
    tv = view(VIEWS[TensorValue], {"shape": [2], "dtype": "float32", "values": [1.0, "nan"],
                                   "stats": {"min": 1.0, "max": "nan", "mean": "nan", "norm": "nan"}})
    assert tv.stale is None and tv.stats.max == "nan"  # an absent addition reads as the model's default
    assert tv == TensorValue.model_validate(tv.__dict__) and tv.validated() == tv
    assert tv.model_dump(exclude_none=True)["values"] == [1.0, "nan"]
    for attempt in (lambda: setattr(tv, "dtype", "x"), lambda: delattr(tv, "dtype")):
        with pytest.raises(AttributeError, match="read-only"):
            attempt()
