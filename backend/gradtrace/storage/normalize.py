"""Upgrade stored documents of older schema versions to the current one, on read.

Share links live forever, so a document written by any past version of gradtrace must keep
loading. Each schema change that renames or removes something bumps ``SCHEMA_VERSION`` and
adds one step here, ``_UPGRADES[n]``, which turns a version-``n`` dict into a version-``n + 1``
dict. Steps are pure functions on plain dicts (no pydantic), so they never depend on the
current models, and they are chained in order. ``tests/fixtures/stored/`` keeps documents as
each version stored them, with the expected upgraded form (``*.normalized.json``); the storage
tests load every one of them after every change.

NOTE [unknown versions]
    A document *newer* than this code (written by a newer server sharing the database during a
    rolling upgrade) is returned unchanged: the models keep unknown fields, and refusing it
    would break a link that works on the newer servers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradtrace.schema import SCHEMA_VERSION

Document = dict[str, Any]

def _v1_to_v2(doc: Document) -> Document:
    """Version 2 added the tensor file's fields (``SCHEMA_VERSION``'s docstring), all optional:
    a version-1 document has no tensor file and none of them, so only its version changes."""
    return doc


# Version 1 is the first published schema; documents saved before ``schema_version`` existed
# (drafts of the walking skeleton) carry no version and are read as version 1.
_UPGRADES: dict[int, Callable[[Document], Document]] = {1: _v1_to_v2}


def stored_version(doc: Document) -> int:
    """The schema version a stored document declares (1 when it declares none)."""
    version = doc.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"schema_version must be a positive integer, got {version!r}")
    return version


def normalize(doc: Document) -> Document:
    """Return ``doc`` upgraded to ``SCHEMA_VERSION`` (a new dict when anything changed)."""
    version = stored_version(doc)
    if version >= SCHEMA_VERSION:
        if "schema_version" not in doc:
            doc = {**doc, "schema_version": version}
        return doc
    while version < SCHEMA_VERSION:
        step = _UPGRADES.get(version)
        if step is None:
            raise ValueError(f"no upgrade from schema_version {version} to {version + 1}")
        doc = step(dict(doc))
        version += 1
        doc["schema_version"] = version
    return doc
