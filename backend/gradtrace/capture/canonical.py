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

import re
from typing import Any

from gradtrace.capture.values import TensorValueDict
from gradtrace.schema import canonical_json

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a pinned dependency
    orjson = None  # type: ignore[assignment]

# orjson → repr: "1e-9" → "1e-09"; "0.00001" → "1e-05"; "0.000015" → "1.5e-05". A number
# token ends before ",", "]" or "}"; each pattern starts with a literal, which keeps the
# regex engine on its fast substring search.
_SHORT_EXPONENTS = tuple((b"e-%d" % d, tuple((b"e-%d%c" % (d, end), b"e-0%d%c" % (d, end))
                                              for end in b",]}"))
                          for d in range(1, 10))
_FIXED_SMALL = re.compile(rb"0\.0000([1-9])(\d*)(?=[,\]}])")
_TOKEN_START = frozenset(b"[,:-")


def _small_as_repr(m: re.Match[bytes]) -> bytes:
    if m.string[m.start() - 1] not in _TOKEN_START:  # inside a larger number ("10.00001")
        return m[0]
    lead, rest = m.groups()
    return lead + (b"." + rest if rest else b"") + b"e-05"


def repr_floats(text: bytes) -> bytes:
    """orjson's text of numbers (no free text!) with floats written as ``repr`` writes them."""
    if b"e-" in text:
        for probe, pairs in _SHORT_EXPONENTS:  # C-level replaces, no Python call per number
            if probe in text:
                for old, new in pairs:
                    text = text.replace(old, new)
    if b"0.0000" in text:
        text = _FIXED_SMALL.sub(_small_as_repr, text)
    return text


def _default(obj: Any) -> Any:
    """Subclasses orjson leaves to us: TensorValues (see the NOTE), and any other subclass of
    a JSON type as ``json.dumps`` writes it."""
    if isinstance(obj, TensorValueDict):
        return orjson.Fragment(repr_floats(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)))
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


def canonical_bytes(obj: Any) -> bytes:
    """``gradtrace.schema.canonical_json(obj)``, faster (NOTE [canonical JSON with orjson])."""
    if orjson is None:
        return canonical_json(obj)
    try:
        return orjson.dumps(obj, default=_default,
                            option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except (TypeError, orjson.JSONEncodeError):
        return canonical_json(obj)
