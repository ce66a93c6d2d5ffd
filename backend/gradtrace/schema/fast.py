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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypeAliasType, TypedDict  # pydantic needs these on Python 3.11

from gradtrace.schema.canonical import TensorValueDict

_STRICT = ConfigDict(strict=True, extra="forbid")

_Special = Literal["nan", "inf", "-inf"]
_Finite = Annotated[float, Field(allow_inf_nan=False)]
_Scalar = bool | int | _Finite | _Special
_Values = TypeAliasType("_Values", "_Scalar | list[_Values]")  # type: ignore[misc]
_Number = int | _Finite | _Special


@with_config(_STRICT)
class _Stats(TypedDict):
    min: _Number | None
    max: _Number | None
    mean: _Number | None
    norm: _Number | None


@with_config(_STRICT)
class _TensorValueShape(TypedDict):
    shape: list[int]
    dtype: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{0,64}$")]
    values: _Values | None
    stats: _Stats | None
    stale: NotRequired[bool]
    layout: NotRequired[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.]{0,64}$")]]
    nonzero: NotRequired[int]
    note: NotRequired[str]


_TensorValue = Annotated[_TensorValueShape, AfterValidator(TensorValueDict)]


@with_config(_STRICT)
class _OutputMeta(TypedDict):
    shape: list[int] | None
    dtype: str | None
    device: str | None


@with_config(_STRICT)
class _SavedTensor(TypedDict):
    name: str
    shape: list[int] | None
    dtype: str | None
    bytes: int
    is_parameter: bool
    is_input: bool
    freed_after_pass: int | None


@with_config(_STRICT)
class _Cut(TypedDict):
    kind: Literal["detach", "no_grad", "inference_mode", "data"]
    line: int | None
    source: str | None


@with_config(_STRICT)
class _ModuleCall(TypedDict):
    path: str
    call: int


@with_config(_STRICT)
class _GradReset(TypedDict):
    at: int
    kind: Literal["none", "zero"]
    line: int | None


@with_config(_STRICT)
class _ModuleInfo(TypedDict):
    path: str
    type: str
    calls: int


@with_config(_STRICT)
class _Node(TypedDict):
    id: str
    kind: Literal["function", "tensor"]
    name: str | None
    line: int | None
    module: str | None
    shape: list[int] | None
    dtype: str | None
    device: str | None
    grad: _TensorValue | None
    seq: int | None
    role: str | None
    created_in_pass: int | None
    saved: list[_SavedTensor]
    saved_bytes: int
    value: _TensorValue | None
    grad_history: list[_TensorValue]
    cut: _Cut | None
    outputs: NotRequired[list[_OutputMeta]]
    saved_unread: NotRequired[bool]
    roles: NotRequired[list[str]]
    module_stack: NotRequired[list[_ModuleCall]]
    grad_resets: NotRequired[list[_GradReset]]


@with_config(_STRICT)
class _HookChange(TypedDict):
    before: _TensorValue | None
    after: _TensorValue | None


@with_config(_STRICT)
class _Edge(TypedDict):
    source: str
    target: str
    input_nr: int | None
    cut: NotRequired[bool]


_Event = TypedDict("_Event", {
    "phase": Literal["forward", "backward"],
    "node": str,
    "pass": int | None,
    "line": int | None,
    "grad_outputs": list[_TensorValue | None] | None,
    "grad_inputs": list[_TensorValue | None] | None,
    "grad": _TensorValue | None,
    "changed_by_hook": bool,
    "hook_changes": NotRequired[list[_HookChange]],
})
_Event.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]  # what with_config does


@with_config(_STRICT)
class _BackwardPass(TypedDict):
    index: int
    api: str
    line: int | None
    roots: list[str]
    retain_graph: bool
    create_graph: bool
    freed_bytes: int
    completed: bool


@with_config(_STRICT)
class _RunError(TypedDict):
    type: str
    message: str
    line: int | None
    node: str | None
    detail: str | None
    inplace_line: NotRequired[int]
    inplace_op: NotRequired[str]
    inplace_node: NotRequired[str]
    saved_version: NotRequired[int]
    current_version: NotRequired[int]
    saved_name: NotRequired[str]
    module: NotRequired[str]
    module_type: NotRequired[str]
    op: NotRequired[str]
    shapes: NotRequired[list[list[int]]]


@with_config(_STRICT)
class _Graph(TypedDict):
    nodes: list[_Node]
    edges: list[_Edge]


@with_config(_STRICT)
class _Memory(TypedDict):
    saved_bytes_total: int
    freed_bytes_total: int


@with_config(_STRICT)
class _RecorderErrors(TypedDict):
    count: int
    first: list[str]


@with_config(_STRICT)
class _Evidence(TypedDict):
    label: str
    value: str


@with_config(_STRICT)
class _Hint(TypedDict):
    code: str
    severity: Literal["error", "warning", "info"]
    title: str
    message: str
    line: int | None
    nodes: list[str]
    evidence: list[_Evidence]
    fix: str
    lesson: str | None


_NonFinite = TypedDict("_NonFinite", {
    "phase": Literal["forward", "backward"],
    "kind": Literal["nan", "inf"],
    "node": str,
    "name": str | None,
    "line": int | None,
    "pass": int | None,
    "event": int | None,
    "output": int | None,
    "elements": list[int],
    "count": int | None,
    "cause": str | None,
    "passed_on": list[str],
    "sentence": str,
    "trap": str | None,
    "fix": NotRequired[str],
})
_NonFinite.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]  # what with_config does


@with_config(_STRICT)
class _Analysis(TypedDict):
    badge: str | None
    nonfinite: list[_NonFinite]
    hints: list[_Hint]


@with_config(_STRICT)
class _RunDocument(TypedDict):
    schema_version: Annotated[int, Field(ge=1, le=2**31 - 1)]
    id: str
    status: Literal["ok", "error", "timeout", "memory_limit", "output_limit", "graph_limit", "crashed"]
    error: _RunError | None
    stdout: str
    device: str
    graph: _Graph
    events: list[_Event]
    message: str | None
    stdout_truncated: bool
    code: str | None
    seed: int | None
    passes: list[_BackwardPass]
    memory: _Memory
    torch_version: str | None
    recorder_errors: NotRequired[_RecorderErrors]
    modules: NotRequired[list[_ModuleInfo]]
    analysis: NotRequired[_Analysis]


STRICT_DOCUMENT: TypeAdapter[_RunDocument] = TypeAdapter(_RunDocument)


def validate_strict_json(raw: bytes) -> dict[str, Any] | None:
    """The document in ``raw`` if it is a fixed point of the schema (NOTE [fast path]), else None.

    None says nothing about validity: the caller validates such documents the general way.
    """
    try:
        with gc_paused():
            return dict(STRICT_DOCUMENT.validate_json(raw))
    except (ValidationError, ValueError, RecursionError):
        return None


# --------------------------------------------------------------------- the collector
_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while building a big acyclic document (thread-safe).

    Validating 4 MB makes ~150,000 objects; each young collection on the way and every
    older one the growth triggers walks them again (half the time of a validation). Nothing
    built here is cyclic, so reference counting frees it all; collection resumes after.
    """
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()
