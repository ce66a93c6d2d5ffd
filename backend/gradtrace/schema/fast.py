"""A fast path for the documents capture writes: validate and canonicalise in one pass each.

NOTE [fast path]
    A job's result is untrusted, so the web process validates it against :class:`RunDocument`
    and stores its canonical JSON (:func:`gradtrace.schema.canonical_json`). Done the general
    way, a 4 MB document (GRU unrolled 200 steps: 36,000 objects, 47,000 floats) costs a
    pydantic model per object, a ``model_dump`` and two ``json.dumps`` (the id, then the
    stored bytes), with the cyclic garbage collector walking the growing heap throughout.

    Capture always writes documents that are fixed points of the schema: every field present,
    nothing extra, every value of its exact JSON type. :data:`STRICT_DOCUMENT` is a pydantic
    ``TypeAdapter`` over ``TypedDict`` s that accepts exactly such documents (``strict``,
    ``extra="forbid"``, every field required except the omitted-when-absent additions, which
    may not be null) and yields plain dicts. On a document it accepts, ``RunDocument``
    validation followed by ``model_dump(mode="json", by_alias=True)`` gives an equal dict,
    because nothing is coerced, defaulted, dropped or renamed. Anything it refuses goes the
    general way, so the documents accepted and refused are the same as before and the error
    is the general path's; ``tests/sandbox/test_fast_path.py`` holds both paths equal.

    The fast path also bounds what can appear inside a TensorValue: ``dtype`` is a short
    name of ``[A-Za-z0-9_.]``, values and stats are numbers, booleans and the strings
    ``"nan"``, ``"inf"``, ``"-inf"``, and floats are finite. Each comes out as a
    :class:`~gradtrace.schema.canonical.TensorValueDict`, which is what lets the one canonical
    writer re-spell its floats (NOTE [canonical JSON with orjson] in
    :mod:`gradtrace.schema.canonical`); the rest of the document holds strings and integers.

NOTE [a strict twin generated from each model]
    The ``TypedDict`` of each model is made here from the model itself (:func:`strict_twin`):
    its fields and aliases, their types with every nested model replaced by its twin, the
    model's own constraints (``schema_version``'s bounds), every field required, and the
    omitted-when-absent additions ``NotRequired`` and never null. Only what the fast path
    bounds beyond the schema is written down here: a JSON number is ``_Number`` (finite, or
    one of the three strings), a TensorValue's ``values`` are ``_Values``, its ``dtype`` and
    ``layout`` are short names (``_BOUNDS``). A field added to a model is in its twin at once.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from typing import Annotated, Any, Literal, NotRequired, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import TypeAliasType, TypedDict  # pydantic needs these on Python 3.11

from gradtrace.collector import gc_paused
from gradtrace.schema import document as models
from gradtrace.schema.base import _Model
from gradtrace.schema.canonical import TensorValueDict

_STRICT = ConfigDict(strict=True, extra="forbid")

_Special = Literal["nan", "inf", "-inf"]
_Finite = Annotated[float, Field(allow_inf_nan=False)]
_Scalar = bool | int | _Finite | _Special
_Values = TypeAliasType("_Values", "_Scalar | list[_Values]")  # type: ignore[misc]
_Number = int | _Finite | _Special
_NAME = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{0,64}$")]
_ARG_NAME = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,32}$")]
_Arg = bool | int | _Finite | _Special | _ARG_NAME | list[int]
"""A saved argument (``models.SavedArg``) as capture writes it (NOTE [saved arguments] in capture/saved.py)."""
_BOUNDS: dict[tuple[type[BaseModel], str], Any] = {
    (models.TensorValue, "dtype"): _NAME, (models.TensorValue, "layout"): _NAME,
    (models.Node, "saved_args"): dict[str, _Arg],
}
"""What the fast path bounds beyond the schema (NOTE [fast path]), by (model, key)."""

STRICT: dict[type[BaseModel], Any] = {}
"""Each document model's strict twin (NOTE [a strict twin generated from each model])."""


def _union(members: list[Any]) -> Any:
    return functools.reduce(operator.or_, members[1:], members[0])


def _strict_hint(hint: Any) -> Any:
    """``hint`` (a model field's type) as the strict twin types it."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = list(get_args(hint))
        if {int, float, str} <= set(members):  # the schema's Number
            members = [m for m in members if m not in (int, float, str)] + [_Number]
            members.sort(key=lambda m: m is type(None))
        return _union([_strict_hint(m) for m in members])
    if origin is list:
        return list[_strict_hint(get_args(hint)[0])]  # type: ignore[misc]
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        twin = strict_twin(hint)
        # a TensorValue comes out marked for the canonical writer (NOTE [fast path])
        return Annotated[twin, AfterValidator(TensorValueDict)] if hint is models.TensorValue else twin
    if hint is object:  # a TensorValue's values
        return _Values
    return hint


def _not_null(hint: Any) -> Any:
    members = [m for m in get_args(hint) if m is not type(None)]
    return _union(members) if get_origin(hint) in (typing.Union, types.UnionType) else hint


def strict_twin(model: type[BaseModel]) -> Any:
    """The strict ``TypedDict`` of ``model`` (NOTE [a strict twin generated from each model])."""
    if model in STRICT:
        return STRICT[model]
    fields: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        key = f.alias or name
        hint = _BOUNDS.get((model, key)) or _strict_hint(f.annotation)
        if f.metadata:  # the model's own constraints
            hint = Annotated[(hint, *f.metadata)]  # type: ignore[valid-type]
        if f.exclude_if is not None:  # an addition: absent or a value, never null
            hint = NotRequired[_not_null(hint)]  # type: ignore[valid-type]
        fields[key] = hint
    twin: Any = TypedDict(f"Strict{model.__name__}", fields)  # type: ignore[misc]
    twin.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]  # what pydantic's with_config sets
    STRICT[model] = twin
    return twin


_MODELS: list[type[BaseModel]] = [models.RunDocument, *_Model.__subclasses__()]
for _model in _MODELS:
    strict_twin(_model)
STRICT_DOCUMENT: TypeAdapter[dict[str, Any]] = TypeAdapter(STRICT[models.RunDocument])


def validate_strict_json(raw: bytes) -> dict[str, Any] | None:
    """The document in ``raw`` if it is a fixed point of the schema (NOTE [fast path]), else None.

    None says nothing about validity: the caller validates such documents the general way.
    """
    try:
        with gc_paused():
            return dict(STRICT_DOCUMENT.validate_json(raw))
    except (ValidationError, ValueError, RecursionError):
        return None
