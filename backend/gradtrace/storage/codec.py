"""How a run document is turned into stored bytes and back.

NOTE [stored form]
    A document is stored as the gzip of its canonical JSON (:func:`gradtrace.schema.canonical_json`
    of the validated, fully defaulted model dump), next to its ``schema_version``. gzip (not raw
    zlib) so that ``GET /api/shares/{id}`` can hand the stored bytes to a client that accepts
    gzip without decompressing or re-encoding anything; ``mtime=0`` so that the same document
    always gives the same bytes. Documents of an older ``schema_version`` are upgraded on read
    by :mod:`gradtrace.storage.normalize` and never rewritten in place: the stored bytes are
    what the author shared.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from gradtrace.schema import SCHEMA_VERSION, RunDocument, canonical_json, document_id

# Level 6 is gzip's default; on run documents level 1 is ~3× faster and ~25 % larger. Shares are
# written once and read often, runs are written on every POST, so both use a middle level.
COMPRESS_LEVEL = 5


@dataclass(frozen=True)
class EncodedDocument:
    """A validated document ready to store: its id, canonical bytes and their gzip."""

    doc_id: str
    schema_version: int
    status: str
    raw: bytes
    gz: bytes

    @property
    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON: the source of the share id."""
        return hashlib.sha256(self.raw).hexdigest()


@dataclass(frozen=True)
class StoredBlob:
    """A document as it sits in the database."""

    schema_version: int
    gz: bytes
    size: int


def canonical_document(doc: dict[str, Any]) -> dict[str, Any]:
    """Validate ``doc`` as a run document and return its canonical dict with a fresh id.

    The id is recomputed (``document_id``) so that a document can never claim an id that its
    content does not hash to, and so that two spellings of the same document (defaults left
    out or written out) become byte-identical.
    """
    model = RunDocument.model_validate(doc)
    out = model.model_dump(mode="json", by_alias=True)
    out["id"] = document_id(out)
    return out


def encode(doc: dict[str, Any]) -> EncodedDocument:
    """Canonicalise and compress a run document (raises pydantic's ValidationError)."""
    canon = canonical_document(doc)
    raw = canonical_json(canon)
    return EncodedDocument(doc_id=str(canon["id"]), schema_version=int(canon["schema_version"]),
                           status=str(canon["status"]), raw=raw, gz=compress(raw))


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


def current_bytes(blob: StoredBlob) -> tuple[bytes, bool]:
    """The bytes to serve for a stored document: ``(data, is_gzip)``.

    A document already at the current schema version is served as stored (gzip); an older
    one is upgraded and re-encoded (plain JSON).
    """
    if blob.schema_version == SCHEMA_VERSION:
        return blob.gz, True
    return canonical_json(load(blob)), False


