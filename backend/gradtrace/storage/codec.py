"""How a run document is turned into stored bytes and back.

NOTE [stored form]
    A document is stored as the gzip of its canonical JSON (:func:`gradtrace.schema.canonical_json`
    of the validated, fully defaulted model dump), next to its ``schema_version`` and the
    SHA-256 of that JSON. gzip (not raw zlib) so that ``GET /api/shares/{id}`` can hand the
    stored bytes to a client that accepts gzip without decompressing or re-encoding anything;
    ``mtime=0`` so that the same document always gives the same bytes. Documents of an older
    ``schema_version`` are upgraded on read by :mod:`gradtrace.storage.normalize` and never
    rewritten in place: the stored bytes are what the author shared.

NOTE [one serialisation] (in :mod:`gradtrace.schema.canonical`)
    The id and the stored bytes come from one serialisation; a document the sandbox answered
    (:class:`~gradtrace.schema.canonical.CanonicalDocument`) brings them along.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from typing import Any

from gradtrace.schema import SCHEMA_VERSION, RunDocument, canonical_json
from gradtrace.schema.canonical import CanonicalDocument, canonical_with_id, check_json, content_hash

# gzip level 5: on run documents it is ~2x faster than level 9 and within ~2 % of its size;
# documents are written once per run or share and read many times.
COMPRESS_LEVEL = 5
MAX_DEPTH = 64
"""Deepest nesting accepted in an untrusted document; real ones stay under ~20 (tensor values
of a few dimensions inside nodes inside the graph)."""


@dataclass(frozen=True)
class StoredBlob:
    """A document as it sits in the database: gzip'd canonical JSON and what describes it."""

    schema_version: int
    gz: bytes
    size: int
    content_hash: str | None = None


@dataclass(frozen=True)
class EncodedDocument:
    """A validated document ready to store: its id, status, canonical bytes and their gzip."""

    doc_id: str
    status: str
    raw: bytes
    blob: StoredBlob

    @property
    def content_hash(self) -> str:
        assert self.blob.content_hash is not None
        return self.blob.content_hash


def encode(doc: dict[str, Any]) -> EncodedDocument:
    """Validate an untrusted document, give it its content id, canonicalise and compress it.

    Raises pydantic's ValidationError, or ValueError / RecursionError / UnicodeEncodeError for
    what JSON cannot hold or what nests deeper than ``MAX_DEPTH``. The id is recomputed so
    that a document can never claim an id its content does not hash to, and two spellings of
    one document (defaults left out or written out) become byte-identical.
    """
    check_json(doc, MAX_DEPTH)
    dumped = RunDocument.model_validate(doc).model_dump(mode="json", by_alias=True)
    check_json(dumped, MAX_DEPTH)
    return encode_validated(dumped)


def encode_validated(doc: dict[str, Any]) -> EncodedDocument:
    """Encode a document that is already a full model dump."""
    carried = doc.canonical_for() if isinstance(doc, CanonicalDocument) else None
    if carried is not None and isinstance(doc.get("id"), str):
        doc_id, raw = doc["id"], carried
    else:
        doc_id, raw = canonical_with_id(doc)
    return encode_canonical(doc_id, str(doc.get("status")), int(doc.get("schema_version", SCHEMA_VERSION)), raw)


def encode_canonical(doc_id: str, status: str, schema_version: int, raw: bytes) -> EncodedDocument:
    """Encode canonical bytes whose id, status and version are known (a runner's
    :class:`~gradtrace.jobs.JobResult`): compressed and hashed, never parsed."""
    blob = StoredBlob(schema_version=schema_version, gz=compress(raw), size=len(raw),
                      content_hash=content_hash(raw))
    return EncodedDocument(doc_id=doc_id, status=status, raw=raw, blob=blob)


def compress(raw: bytes) -> bytes:
    return gzip.compress(raw, compresslevel=COMPRESS_LEVEL, mtime=0)


def decompress(gz: bytes) -> bytes:
    # zlib with wbits=31 reads the gzip container without gzip's Python-level file machinery.
    return zlib.decompress(gz, wbits=31)


def load(blob: StoredBlob) -> dict[str, Any]:
    """The stored document as a dict, upgraded to the current schema."""
    from gradtrace.storage.normalize import normalize

    doc = json.loads(decompress(blob.gz))
    if not isinstance(doc, dict):
        raise ValueError("stored document is not a JSON object")
    return normalize(doc)


def current_json(blob: StoredBlob) -> bytes:
    """The plain canonical JSON of a stored document at the current schema version.

    NOTE [stored bytes served as they are]
        A document of the current ``schema_version`` was validated and canonicalised when it
        was stored, so its stored bytes are already what the normalizer and the canonical
        writer would give: they are only decompressed, never parsed, normalised and written
        again (a GRU-200 document is 4 MB of JSON). Only an older version goes through
        :mod:`gradtrace.storage.normalize` and the writer.
    """
    if blob.schema_version == SCHEMA_VERSION:
        return decompress(blob.gz)
    return canonical_json(load(blob))


def current_bytes(blob: StoredBlob) -> tuple[bytes, bool]:
    """The bytes to serve for a stored document: ``(data, is_gzip)``.

    A document already at the current schema version is served as stored (gzip); an older
    one is upgraded and re-encoded (plain JSON): NOTE [stored bytes served as they are].
    """
    if blob.schema_version == SCHEMA_VERSION:
        return blob.gz, True
    return canonical_json(load(blob)), False
