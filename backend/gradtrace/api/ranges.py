"""HTTP byte ranges and entity tags for immutable files, as RFC 9110 defines them.

Only what serving a tensor file needs: one ``bytes`` range, ``If-None-Match`` (weak
comparison, section 13.1.2) and ``If-Range`` (strong comparison, section 13.1.5).

NOTE [which Range requests are answered how]
    * ``bytes=a-b``, ``bytes=a-``, ``bytes=-n`` (one range): 206 with ``Content-Range``; a
      ``b`` past the end is cut to the last byte (section 14.1.2).
    * A range that starts at or past the end, or ``bytes=-0``: 416 with
      ``Content-Range: bytes */size`` (section 15.5.17).
    * Not a valid byte-range set (``bytes=5-3``, ``bytes=x``, ``bytes=``): 400; section 14.2
      lets a server reject an invalid ranges-specifier.
    * Another unit, several ranges, or an ``If-Range`` that does not match the ETag: the
      Range header is ignored and the whole file answered 200 (section 14.2: a server MAY
      ignore Range; it MUST ignore a unit it does not know). Several ranges would need a
      multipart answer, which no reader of these files asks for.
    * ``If-None-Match`` matching the ETag: 304 before any of the above (section 13.2.2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradtrace.errors import InvalidRange, RangeNotSatisfiable

_SPEC = re.compile(r"([0-9]*)-([0-9]*)")
_DIGITS_MAX = 18
"""Positions longer than this are past any file (and cannot overflow anything)."""


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``start`` to ``end`` (exclusive) of a file of ``size`` bytes."""

    start: int
    end: int
    size: int

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end - 1}/{self.size}"


def requested_range(header: str | None, size: int, *, if_range: str | None = None,
                    etag: str = "") -> ByteRange | None:
    """The one range to answer with 206, or None for the whole file (NOTE [which Range
    requests are answered how]); raises InvalidRange (400) or RangeNotSatisfiable (416)."""
    if header is None:
        return None
    unit, eq, spec = header.partition("=")
    if not eq or unit.strip().lower() != "bytes":
        return None
    if if_range is not None and not strong_match(if_range, etag):
        return None
    parts = [p.strip() for p in spec.split(",")]
    if any(not _SPEC.fullmatch(p) or p == "-" for p in parts):
        raise InvalidRange(f"the Range header {header[:80]!r} is not a valid byte range: use bytes=start-end, "
                           "bytes=start- or bytes=-suffix", detail={"range": header[:200]})
    if len(parts) > 1:
        return None
    first_text, last_text = _SPEC.fullmatch(parts[0]).groups()  # type: ignore[union-attr]
    first = _position(first_text, size)
    last = _position(last_text, size)
    if first is not None and last is not None and last < first:
        raise InvalidRange(f"the Range {parts[0]!r} ends before it starts", detail={"range": header[:200]})
    if first is None:  # suffix: the last ``last`` bytes
        assert last is not None
        if last == 0 or size == 0:
            raise _unsatisfiable(header, size)
        return ByteRange(max(0, size - last), size, size)
    if first >= size:
        raise _unsatisfiable(header, size)
    end = size if last is None else min(last + 1, size)
    return ByteRange(first, end, size)


def none_match(header: str | None, etag: str) -> bool:
    """True when ``If-None-Match`` names ``etag`` (or is ``*``): answer 304."""
    if header is None:
        return False
    if header.strip() == "*":
        return True
    return any(_opaque(tag) == _opaque(etag) for tag in header.split(","))


def strong_match(header: str, etag: str) -> bool:
    """``If-Range``: an exact, strong entity tag (a date never matches: no Last-Modified)."""
    tag = header.strip()
    return not tag.startswith("W/") and tag == etag


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def _position(text: str, size: int) -> int | None:
    if not text:
        return None
    return int(text) if len(text) <= _DIGITS_MAX else size + 1


def _unsatisfiable(header: str, size: int) -> RangeNotSatisfiable:
    return RangeNotSatisfiable(f"the Range {header[:80]!r} asks for no byte of a file of {size} bytes",
                               size=size, detail={"range": header[:200], "size": size})
