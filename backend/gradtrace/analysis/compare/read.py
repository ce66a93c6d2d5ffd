"""Reading a stored run document for a comparison: only the fields the comparison reads.

NOTE [what a comparison reads]
    :func:`gradtrace.analysis.compare.compare_documents` reads plain dicts. A stored document
    (canonical JSON of the current schema) holds much it never reads: each node's output
    metadata, gradient history, dtype and device, the values of its saved tensors; each event's line
    and hook flag. :func:`read_for_compare` decodes the JSON straight into dicts that hold only
    the fields below (msgspec skips the rest without building them): on a GRU unrolled 200
    steps, about half the parse time, and a smaller document kept in the service's cache
    (NOTE [comparison caches] in ``api/compare_cache.py``). The comparison's answer is the
    same as from the whole document (``tests/analysis/test_compare_read.py``). A field the
    comparison starts to read must be named here too: that test compares the two on every
    lesson and on runs with edits, seeds, checkpoints and custom functions.
    Tensor values and module stacks are taken whole (``Any``): the comparison reads most of
    them.

NOTE [a subset named by hand]
    The structs below name fields of the schema's models (``schema/document.py``) by hand
    rather than deriving them: what they list is the comparison's choice, not the schema's,
    and the schema is pydantic while the fast decoder needs msgspec types, so a derivation
    would be a translator bigger than the list it replaces. A name the schema does not have
    fails ``tests/analysis/test_compare_read.py``, so the copy cannot drift from the model.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

import msgspec


class _Saved(TypedDict, total=False):
    bytes: Any
    is_parameter: Any
    freed_after_pass: Any


class _Node(TypedDict, total=False):
    id: Any
    kind: Any
    name: Any
    line: Any
    module: Any
    module_stack: Any
    role: Any
    shape: Any
    value: Any
    grad: Any
    saved: list[_Saved] | None
    saved_unread: Any
    saved_once: Any
    output: Any


# "pass" is a keyword: the functional form names it.
_Event = TypedDict("_Event", {"node": Any, "phase": Any, "pass": Any, "grad_inputs": Any, "grad": Any,
                              "grad_outputs": Any}, total=False)


class _Graph(TypedDict, total=False):
    nodes: list[_Node]


class _Document(TypedDict, total=False):
    schema_version: Any
    id: Any
    status: Any
    seed: Any
    device: Any
    code: Any
    graph: _Graph
    events: list[_Event] | None


_DECODER = msgspec.json.Decoder(_Document)


def read_for_compare(raw: bytes) -> dict[str, Any]:
    """The fields of canonical run-document JSON ``raw`` that a comparison reads, as dicts.
    Raises ``ValueError`` when ``raw`` is not a JSON object of that shape."""
    try:
        doc = _DECODER.decode(raw)
    except msgspec.DecodeError as exc:  # ValidationError is one
        raise ValueError(f"not a run document: {exc}") from exc
    return cast(dict[str, Any], doc)
