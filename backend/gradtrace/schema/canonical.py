"""Canonical JSON and content ids.

Identical snippets and seeds must give byte-identical JSON, and the same document must always
get the same share link, so every place that serialises a document for hashing or storage goes
through :func:`canonical_json`: sorted keys, no insignificant white space, UTF-8.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


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
    return content_hash(body)[:16]
