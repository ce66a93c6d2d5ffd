"""Canonical JSON and content ids: the one writer and the one id of a run document.

Identical snippets and seeds must give byte-identical JSON, and the same document must always
get the same share link, so everything that serialises a document for hashing or storage goes
through :func:`canonical_json` (sorted keys, no insignificant white space, UTF-8, floats spelled
as ``repr`` spells them), and every document id comes from :func:`canonical_with_id`.
``tests/capture/test_one_writer.py`` holds the code base to that.

NOTE [one serialisation]
    A document's id is the hash of its canonical JSON without the ``id`` key, cut to
    :data:`ID_LENGTH`, and what is stored is the canonical JSON with it. Canonical JSON of a
    dict is ``{`` + the sorted ``"key":value`` pieces joined by ``,`` + ``}``, so
    :func:`canonical_with_id` serialises each top-level value once, hashes the pieces without
    the id and joins them once with it.

NOTE [canonical JSON with orjson]
    ``json.dumps`` spends 2-6 µs on each float (``repr`` of a 17-digit number): on a GRU
    unrolled 200 steps (50,000 numbers, 4 MB) that was 90-130 ms, more than the bare run.
    orjson writes the same bytes for everything a run document holds (sorted keys, compact
    separators, UTF-8 strings with the same escapes, integers, ``-0.0``, every float in
    [1e-4, 1e16)), except floats below 1e-4 in magnitude: ``repr`` writes ``1e-05`` and
    ``1e-09`` where orjson writes ``0.00001`` and ``1e-9``. Floats live only in TensorValues
    (the schema's ``Number``), and every TensorValue that capture makes or that the strict
    validator (:mod:`gradtrace.schema.fast`) yields is a :class:`TensorValueDict`. With
    ``OPT_PASSTHROUGH_SUBCLASS`` orjson hands those to the writer's ``default``, which writes
    each with orjson and stands it in the output as one NUL byte (orjson escapes NUL inside
    strings, so a raw NUL is ours alone); all of them are then re-spelled by byte regexes in
    one pass over their newline-joined text (safe there: a TensorValue holds no free text, only
    numbers, its keys, a dtype and ``"nan"``/``"inf"``) and spliced back in order. A
    TensorValue whose canonical JSON the C++ core wrote carries it (``native``) and is used as
    it is; so is a :class:`CanonicalText` (capture's graph and events, written by the core),
    which stands in the output as a byte \x01 until the rest is written and checked.
    Floats anywhere else (a model dump: the general path) are found by one byte search and,
    when one could need it, re-spelled token by token, strings skipped.
    ``tests/capture/test_canonical.py`` holds this writer equal to ``json.dumps`` on every
    golden document and on floats of every magnitude, marked or plain. On anything orjson refuses (non-string
    keys, integers beyond 64 bits) ``json.dumps`` writes the document.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

import orjson

ID_LENGTH = 16
"""Hex digits of a document id (a prefix of the SHA-256 of its canonical JSON without it)."""


class TensorValueDict(dict[str, Any]):
    """A TensorValue as a plain JSON-able dict; the subclass marks where the canonical writer
    re-spells floats (NOTE [canonical JSON with orjson]) and may carry ``native``: the
    canonical JSON the C++ core wrote for it, which the writer then uses as it is."""

    __slots__ = ("native",)
    native: bytes


class CanonicalText(bytes):
    """JSON text that is canonical already (the C++ core's graph and events): written as it is,
    and never searched for floats to re-spell (NOTE [canonical JSON with orjson])."""

    __slots__ = ()


# orjson → repr: "1e-9" → "1e-09"; "0.00001" → "1e-05"; "0.000015" → "1.5e-05" (orjson writes
# every other finite float as repr does). A number token ends before ",", "]" or "}"; each
# pattern starts with a literal, which keeps the regex engine on its fast substring search,
# and the first needs no Python call per match.
_SHORT_EXPONENT = re.compile(rb"e-(?=\d[,\]}])")
_FIXED_SMALL = re.compile(rb"0\.0000([1-9])(\d*)(?=[,\]}])")
_TOKEN_START = frozenset(b"[,:-")
_MARK = orjson.Fragment(b"\x00")
_RAW_MARK = orjson.Fragment(b"\x01")
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS


def _small_as_repr(m: re.Match[bytes]) -> bytes:
    if m.string[m.start() - 1] not in _TOKEN_START:  # inside a larger number ("10.00001")
        return m[0]
    lead, rest = m.groups()
    return lead + (b"." + rest if rest else b"") + b"e-05"


def _repr_floats(text: bytes) -> bytes:
    """orjson's text of numbers (no free text!) with floats written as ``repr`` writes them."""
    text = _SHORT_EXPONENT.sub(b"e-0", text)
    if b"0.0000" in text:
        text = _FIXED_SMALL.sub(_small_as_repr, text)
    return text


# A plain float below 1e-4 outside the TensorValues (a dict that did not come from capture or
# the strict validator), or text that looks like one: such output is re-spelled outside its
# strings. Canonical text never matches (repr writes "1e-05", and never "0.0000" at a number's
# start), so capture's documents, whose floats are all marked, are not re-spelled twice. Each
# search starts with a literal (the regex engine's fast substring scan): a 4 MB document costs
# well under a millisecond.
_ORJSON_EXPONENT = re.compile(rb"e-\d[,\]}]")
_FIXED_START = re.compile(rb"0\.0000[1-9]")


def _may_need_respelling(out: bytes) -> bool:
    if _ORJSON_EXPONENT.search(out):
        return True
    return any(out[m.start() - 1] not in _DIGIT_OR_DOT for m in _FIXED_START.finditer(out))


_DIGIT_OR_DOT = frozenset(b"0123456789.")
_STRING = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")')


def _respell_outside_strings(out: bytes) -> bytes:
    """:func:`_repr_floats` applied to all of ``out`` but its strings, in one pass: the parts
    between strings are joined by a quote (never in them), re-spelled, and split again."""
    parts = _STRING.split(out)
    parts[0::2] = _repr_floats(b'"'.join(parts[0::2])).split(b'"')
    return b"".join(parts)


def _splice_values(out: bytes, texts: list[bytes]) -> bytes:
    """``out`` with each NUL byte replaced by the next of ``texts``, all re-spelled in one pass
    over their newline-joined text (orjson never writes a raw newline or NUL)."""
    if not texts:
        return out
    fixed = _repr_floats(b"\n".join(texts)).split(b"\n")
    parts: list[bytes] = [b""] * (2 * len(fixed) + 1)
    parts[0::2] = out.split(b"\x00")
    parts[1::2] = fixed
    return b"".join(parts)


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


def canonical_json(obj: Any) -> bytes:
    """``obj`` as canonical JSON: sorted keys, compact separators, UTF-8, ``repr`` floats."""
    texts: list[bytes] = []
    raw: list[bytes] = []
    seen: dict[int, bytes] = {}
    dumps = orjson.dumps

    def default(o: Any) -> Any:
        if o.__class__ is CanonicalText:
            raw.append(o)
            return _RAW_MARK
        if o.__class__ is TensorValueDict:
            native = getattr(o, "native", None)
            if native is not None:  # canonical already: the C++ core wrote it
                return orjson.Fragment(native)
            text = seen.get(id(o))  # the same value met again (one node's input, the next's output)
            if text is None:
                text = seen[id(o)] = dumps(o, option=orjson.OPT_SORT_KEYS)
            texts.append(text)
            return _MARK
        return _plain(o)

    try:
        out = dumps(obj, default=default, option=_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    if _may_need_respelling(out):
        out = _respell_outside_strings(out)
    out = _splice_values(out, texts)
    if not raw:
        return out
    parts: list[bytes] = [b""] * (2 * len(raw) + 1)
    parts[0::2] = out.split(b"\x01")  # orjson escapes a control byte in strings: ours alone
    parts[1::2] = raw
    return b"".join(parts)


def check_json(obj: object, max_depth: int) -> None:
    """Raise ValueError where ``obj`` is not a document :func:`canonical_json` may write: a
    float that is not finite (``json.dumps`` refuses it, orjson would write ``null``) or
    containers nested deeper than ``max_depth``. For a document the general path validated
    (the strict validator refuses both itself); walked iteratively."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise ValueError(f"the document nests deeper than {max_depth} levels")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for v in children:
            if isinstance(v, dict | list):
                stack.append((v, depth + 1))
            elif isinstance(v, float) and not math.isfinite(v):
                raise ValueError("the document holds a number JSON cannot: NaN or infinity")


def content_hash(obj: Any) -> str:
    """Full hex SHA-256 of the canonical JSON of ``obj`` (bytes: of those bytes as they are)."""
    return hashlib.sha256(obj if isinstance(obj, bytes) else canonical_json(obj)).hexdigest()


def canonical_with_id(doc: dict[str, Any]) -> tuple[str, bytes]:
    """``(id, canonical JSON of doc with that id)``: NOTE [one serialisation]. Any ``id`` key
    ``doc`` has is ignored."""
    pieces: dict[str, tuple[bytes, bytes]] = {}  # "key": and the value's JSON, never joined twice
    for key, value in doc.items():
        if key != "id":
            text = value if value.__class__ is CanonicalText else canonical_json(value)
            pieces[key] = (canonical_json(key) + b":", text)
    h = hashlib.sha256(b"{")
    for i, key in enumerate(sorted(pieces)):
        if i:
            h.update(b",")
        h.update(pieces[key][0])
        h.update(pieces[key][1])  # the graph and events are megabytes: hashed where they lie
    h.update(b"}")
    doc_id = h.hexdigest()[:ID_LENGTH]
    pieces["id"] = (b'"id":', b'"' + doc_id.encode() + b'"')
    out: list[bytes] = []
    for key in sorted(pieces):
        out += (b",", *pieces[key])
    out[0] = b"{"
    out.append(b"}")
    return doc_id, b"".join(out)


def document_id(doc: dict[str, Any]) -> str:
    """The stable id of a run document: a hash of everything in it but the id itself."""
    return canonical_with_id(doc)[0]


class CanonicalDocument(dict[str, Any]):
    """A validated run document (a plain dict to its readers) that carries its canonical JSON.

    What the sandbox answers (:func:`gradtrace.sandbox.outcome.validate_result`): the id and
    the bytes were computed together, once, so storage stores ``canonical`` as it is instead
    of serialising the document again. Treat it as read-only; :meth:`canonical_for` gives
    the bytes only while the top-level fields still are the ones they were computed from.
    """

    __slots__ = ("_fingerprint", "canonical")

    def __init__(self, doc: dict[str, Any], canonical: bytes) -> None:
        super().__init__(doc)
        self.canonical = canonical
        self._fingerprint = self._top_level()

    def _top_level(self) -> tuple[tuple[str, int], ...]:
        return tuple((key, id(value)) for key, value in self.items())

    def canonical_for(self) -> bytes | None:
        """The carried bytes, or None if the dict was changed at the top level since."""
        return self.canonical if self._top_level() == self._fingerprint else None
