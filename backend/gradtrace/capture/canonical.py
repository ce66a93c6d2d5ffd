"""The canonical JSON of a run document, written by orjson, byte for byte what
:func:`gradtrace.schema.canonical_json` (``json.dumps``) writes.

NOTE [canonical JSON with orjson]
    ``json.dumps`` spends 2-6 µs on each float (``repr`` of a 17-digit number): on a GRU
    unrolled 200 steps (50,000 numbers, 4 MB) that was 90-130 ms, more than the bare run.
    orjson writes the same bytes for everything a run document holds (sorted keys, compact
    separators, UTF-8 strings with the same escapes, integers, ``-0.0``, every float in
    [1e-4, 1e16)), except floats below 1e-4 in magnitude: ``repr`` writes ``1e-05`` and
    ``1e-09`` where orjson writes ``0.00001`` and ``1e-9``. Floats live only in TensorValues
    (the schema's ``Number``), and every TensorValue the recorder makes is a
    :class:`~gradtrace.capture.values.TensorValueDict`. With ``OPT_PASSTHROUGH_SUBCLASS``
    orjson hands those to :func:`_default`, which writes the TensorValue with orjson and
    rewrites those two number forms with three byte regexes (safe there: a TensorValue holds
    no free text, only numbers, its keys, a dtype and ``"nan"``/``"inf"``), returned as an
    ``orjson.Fragment``. ``tests/capture/test_canonical.py`` holds both writers equal on every
    golden document and on floats of every magnitude. Without orjson, or on anything orjson
    refuses (non-string keys, lone surrogates), the schema's ``canonical_json`` is used.
"""

from __future__ import annotations

from typing import Any

from gradtrace.capture.values import TensorValueDict
from gradtrace.schema import canonical_json
from gradtrace.schema.canonical import repr_floats, splice_values

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a pinned dependency
    orjson = None  # type: ignore[assignment]

# NOTE [one pass over all TensorValues]
#     Each TensorValue is written by orjson on its own and stands in the document as a single
#     NUL byte (a Fragment: orjson escapes NUL inside strings, so a raw NUL is ours alone).
#     All of them are then fixed in one regex pass over their newline-joined text (orjson never
#     writes a raw newline), and spliced back in order: per-value regex calls cost 2 µs each.
_MARK = orjson.Fragment(b"\x00") if orjson is not None else None


def _plain(obj: Any) -> Any:
    """Any other subclass of a JSON type, as ``json.dumps`` writes it."""
    if isinstance(obj, float):
        return orjson.Fragment(float.__repr__(obj).encode())
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, list | tuple):
        return list(obj)
    if isinstance(obj, dict):
        return dict(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def canonical_bytes(obj: Any, *, few_values: bool = False) -> bytes:
    """``gradtrace.schema.canonical_json(obj)``, faster (NOTE [canonical JSON with orjson]).

    ``few_values``: the document holds few TensorValues (the C++ core wrote the events' JSON):
    each is fixed on its own, which spares the splicing pass over the whole output."""
    if orjson is None:
        return canonical_json(obj)
    texts: list[bytes] = []
    seen: dict[int, bytes] = {}
    dumps, sort_keys = orjson.dumps, orjson.OPT_SORT_KEYS

    def default(o: Any) -> Any:
        if o.__class__ is TensorValueDict:
            native = getattr(o, "native", None)
            if native is not None:  # canonical already: the C++ core wrote it
                return orjson.Fragment(native)
            text = seen.get(id(o))  # the same value met again (one node's input, the next's output)
            if text is None:
                text = seen[id(o)] = dumps(o, option=sort_keys)
            if few_values:
                return orjson.Fragment(repr_floats(text))
            texts.append(text)
            return _MARK
        return _plain(o)

    try:
        out = dumps(obj, default=default, option=sort_keys | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except (TypeError, orjson.JSONEncodeError):
        return canonical_json(obj)
    return splice_values(out, texts)
