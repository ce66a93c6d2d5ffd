"""Canonical JSON and content ids.

Identical snippets and seeds must give byte-identical JSON, and the same document must always
get the same share link, so every place that serialises a document for hashing or storage goes
through :func:`canonical_json`: sorted keys, no insignificant white space, UTF-8. (Faster
writers of the same bytes exist for documents of a known shape: NOTE [fast path] in
:mod:`gradtrace.schema.fast`; they are held equal to this one by tests.)

NOTE [one serialisation]
    A document's id is the hash of its canonical JSON without the ``id`` key
    (:func:`document_id`), and what is stored is the canonical JSON with it. Canonical JSON of
    a dict is ``{`` + the sorted ``"key":value`` pieces joined by ``,`` + ``}``, so
    :func:`canonical_with_id` serialises each top-level value once and joins the pieces
    twice, instead of serialising a multi-megabyte document twice. The storage tests check the
    result is byte-identical to ``canonical_json`` and the id to ``document_id``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

ID_LENGTH = 16

# orjson → repr: "1e-9" → "1e-09"; "0.00001" → "1e-05"; "0.000015" → "1.5e-05" (orjson writes
# every other finite float as repr does). A number token ends before ",", "]" or "}"; each
# pattern starts with a literal, which keeps the regex engine on its fast substring search,
# and the first needs no Python call per match.
_SHORT_EXPONENT = re.compile(rb"e-(?=\d[,\]}])")
_FIXED_SMALL = re.compile(rb"0\.0000([1-9])(\d*)(?=[,\]}])")
_TOKEN_START = frozenset(b"[,:-")


def _small_as_repr(m: re.Match[bytes]) -> bytes:
    if m.string[m.start() - 1] not in _TOKEN_START:  # inside a larger number ("10.00001")
        return m[0]
    lead, rest = m.groups()
    return lead + (b"." + rest if rest else b"") + b"e-05"


def splice_values(out: bytes, texts: list[bytes]) -> bytes:
    """``out`` with each NUL byte (a placeholder orjson wrote for a value) replaced by the next
    of ``texts`` (each value's own orjson text), all fixed by :func:`repr_floats` in one pass
    over their newline-joined text (orjson never writes a raw newline or NUL)."""
    if not texts:
        return out
    fixed = repr_floats(b"\n".join(texts)).split(b"\n")
    parts: list[bytes] = [b""] * (2 * len(fixed) + 1)
    parts[0::2] = out.split(b"\x00")
    parts[1::2] = fixed
    return b"".join(parts)


def repr_floats(text: bytes) -> bytes:
    """orjson's text of numbers (no free text!) with floats written as ``repr`` writes them:
    what the faster writers of canonical JSON (capture's and the schema's fast path) apply to
    the parts of a document that hold floats."""
    text = _SHORT_EXPONENT.sub(b"e-0", text)
    if b"0.0000" in text:
        text = _FIXED_SMALL.sub(_small_as_repr, text)
    return text


def canonical_json(obj: Any) -> bytes:
    """Serialise ``obj`` deterministically (sorted keys, compact separators, UTF-8)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def content_hash(obj: Any) -> str:
    """Full hex SHA-256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def document_id(doc: dict[str, Any]) -> str:
    """The stable id of a run document: a hash of everything in it but the id itself."""
    body = {k: v for k, v in doc.items() if k != "id"}
    return content_hash(body)[:ID_LENGTH]


def canonical_with_id(doc: dict[str, Any]) -> tuple[str, bytes]:
    """``(document_id(doc), canonical_json(doc with that id))``, serialising once."""
    pieces = {key: json.dumps(key, ensure_ascii=False).encode("utf-8") + b":" + canonical_json(value)
              for key, value in doc.items() if key != "id"}
    body = b"{" + b",".join(pieces[k] for k in sorted(pieces)) + b"}"
    doc_id = hashlib.sha256(body).hexdigest()[:ID_LENGTH]
    pieces["id"] = b'"id":' + canonical_json(doc_id)
    return doc_id, b"{" + b",".join(pieces[k] for k in sorted(pieces)) + b"}"


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
