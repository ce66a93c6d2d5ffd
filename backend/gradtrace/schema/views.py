"""Read-only views of a document's JSON with the models' attributes, generated from the models.

NOTE [views of the document's JSON]
    Reading every node, edge and event of a GRU unrolled 200 steps as pydantic models costs
    pydantic's validation of 4 MB (36,000 objects): more than three times the bare run,
    spent re-checking bytes that capture's one writer wrote as fixed points of the schema
    (NOTE [documents without pydantic on the hot path] in capture/document.py). A view is the
    parsed JSON object itself (``orjson.loads``, a quarter of the cost) made the instance
    ``__dict__`` of a class generated here from each model (:func:`view_class`): a field is
    read as a plain attribute, a field that holds models (``grad``, ``saved``, ``events`` of
    a hook change) through a property that wraps what it reads in that model's view, and
    ``pass_`` (aliased ``pass``) through a property. The class declares the model's
    ``model_fields``, so code that walks the fields of a model walks a view the same way, and
    a field added to a model is in its view at once. A view is read-only; ``validated()``
    gives the pydantic model (validated from the same JSON), and ``model_dump`` and ``==``
    with a model go through it. ``tests/capture/test_views.py`` holds every view of the
    lessons and the three programs equal, field by field, to the validated models.

    The big lists a view builds (a graph's ``nodes`` and ``edges``) are kept once built
    (:data:`_KEPT`); a node's lists have a few entries and are wrapped on each read.
"""

from __future__ import annotations

import types
import typing
from typing import Any, ClassVar, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gradtrace.schema import document as models
from gradtrace.schema.base import _Model

_new = object.__new__
_set = object.__setattr__
_KEPT: set[type[BaseModel]] = {models.Graph}
"""Models whose list fields are kept once wrapped (NOTE [views of the document's JSON])."""


class View:
    """Base of the generated views: a model's fields over its JSON object, read-only."""

    __slots__ = ("__dict__", "_kept")
    _kept: dict[str, Any]
    model: ClassVar[type[BaseModel]]
    model_fields: ClassVar[dict[str, FieldInfo]]

    def __setattr__(self, name: str, value: Any) -> None:
        self.__delattr__(name)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is a read-only view of the document's JSON; "
                             "call doc.validated() for pydantic models")

    def validated(self) -> BaseModel:
        """The pydantic model of this view's JSON."""
        return self.model.model_validate(self.__dict__)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return self.validated().model_dump(**kwargs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, View):
            return type(other) is type(self) and self.__dict__ == other.__dict__
        if isinstance(other, self.model):
            return self.validated() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.model_fields)
        return f"{type(self).__name__}({fields})"


VIEWS: dict[type[BaseModel], type[View]] = {}
"""Each document model's view class."""


def view(cls: type[View], data: dict[str, Any]) -> Any:
    """``data`` (one JSON object of ``cls.model``) as a view; no copy is made."""
    out = _new(cls)
    _set(out, "__dict__", data)
    return out


def _model_in(hint: Any) -> tuple[type[BaseModel], str] | None:
    """The model a field's type holds and how: ``one`` (``M | None``), ``list`` (``list[M]``,
    ``list[M] | None``) or ``list_or_none`` (``list[M | None] | None``); None for plain JSON."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        found = [f for f in (_model_in(m) for m in get_args(hint) if m is not type(None)) if f]
        return found[0] if found else None
    if origin is list:
        inner = _model_in(get_args(hint)[0])
        if inner is None:
            return None
        return inner[0], "list_or_none" if inner[1] == "one" else "list"
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return hint, "one"
    return None


def _property(key: str, default: Any, kind: str | None, inner: type[BaseModel] | None,
              kept: bool) -> property:
    """The property of a field read from JSON key ``key`` (see :func:`_model_in` for ``kind``)."""
    if inner is None:
        def plain(self: View) -> Any:
            return self.__dict__.get(key, default)
        return property(plain)
    cls = view_class(inner)
    if kind == "one":
        def one(self: View) -> Any:
            v = self.__dict__.get(key, default)
            return None if v is None else view(cls, v)
        return property(one)

    def wrap(raw: list[Any] | None) -> list[Any] | None:
        return None if raw is None else [None if v is None else view(cls, v) for v in raw]

    if not kept:
        return property(lambda self: wrap(self.__dict__.get(key, default)))

    def kept_list(self: View) -> Any:
        try:
            store = self._kept
        except AttributeError:
            store = {}
            _set(self, "_kept", store)
        if key not in store:
            store[key] = wrap(self.__dict__.get(key, default))
        return store[key]
    return property(kept_list)


def view_class(model: type[BaseModel]) -> type[View]:
    """The view class of ``model`` (NOTE [views of the document's JSON])."""
    if model in VIEWS:
        return VIEWS[model]
    ns: dict[str, Any] = {"__slots__": (), "model": model, "model_fields": model.model_fields,
                          "__doc__": f"A read-only view of a {model.__name__}'s JSON."}
    cls: type[View] = type(f"{model.__name__}View", (View,), ns)
    VIEWS[model] = cls  # before the fields: a model may hold itself
    for name, f in model.model_fields.items():
        key = f.alias or name
        default = f.get_default(call_default_factory=True)
        held = _model_in(f.annotation)
        if held is None and key == name:
            type.__setattr__(cls, name, default)  # absent from the JSON: the model's default
            continue
        inner, kind = held if held is not None else (None, None)
        type.__setattr__(cls, name, _property(key, default, kind, inner, model in _KEPT))
    return cls


_MODELS: list[type[BaseModel]] = [models.RunDocument, *_Model.__subclasses__()]
for _model in _MODELS:
    view_class(_model)

GraphView: type[View] = VIEWS[models.Graph]
EventView: type[View] = VIEWS[models.Event]


def graph_view(data: dict[str, Any]) -> Any:
    """A graph's parsed JSON as its view."""
    return view(GraphView, data)


def events_view(data: list[dict[str, Any]]) -> list[Any]:
    """The events' parsed JSON as a list of views."""
    cls = EventView
    return [view(cls, d) for d in data]


__all__: list[str] = ["VIEWS", "EventView", "GraphView", "View", "events_view", "graph_view", "view",
                      "view_class"]
