"""Old documents keep loading: every stored fixture is upgraded and validated on each run.

``tests/fixtures/stored/<name>.json`` are documents exactly as a past version stored them
(never edit them; add new ones when the schema changes). ``<name>.normalized.json`` is what
:func:`gradtrace.storage.normalize.normalize` must turn each into. Set
``GRADTRACE_UPDATE_GOLDEN=1`` to rewrite the ``.normalized.json`` files after a deliberate
change to the normalizer, and review the diff.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from sqlalchemy import insert

from gradtrace.schema import SCHEMA_VERSION, RunDocument, canonical_json, content_hash
from gradtrace.storage import migrate
from gradtrace.storage.codec import compress, load
from gradtrace.storage.engine import ensure_directory
from gradtrace.storage.normalize import normalize, stored_version
from gradtrace.storage.store import Store
from gradtrace.storage.tables import shares

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "stored"
STORED = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".normalized.json"))
UPDATE = os.environ.get("GRADTRACE_UPDATE_GOLDEN") == "1"


def _pretty(obj: object) -> list[str]:
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def test_there_are_stored_fixtures_of_every_schema_version_so_far() -> None:
    versions = {stored_version(json.loads(p.read_bytes())) for p in STORED}
    assert versions >= set(range(1, SCHEMA_VERSION + 1))
    assert any("schema_version" not in json.loads(p.read_bytes()) for p in STORED)


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_stored_document_normalizes_to_its_golden_form_and_validates(path: Path) -> None:
    stored = json.loads(path.read_bytes())
    got = normalize(stored)
    golden = path.with_name(path.stem + ".normalized.json")
    if UPDATE or not golden.exists():
        golden.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    expected = json.loads(golden.read_bytes())
    if got != expected:
        diff = "\n".join(difflib.unified_diff(_pretty(expected), _pretty(got), "golden", "normalized",
                                              lineterm=""))
        pytest.fail(f"{path.name} no longer normalizes to {golden.name}:\n{diff}")
    assert got["schema_version"] == SCHEMA_VERSION
    RunDocument.model_validate(got)


def test_a_document_from_a_newer_server_is_served_unchanged() -> None:
    future = {**json.loads(STORED[-1].read_bytes()), "schema_version": SCHEMA_VERSION + 1, "new": [1]}
    assert normalize(future) == future


@pytest.mark.parametrize("bad", [0, -1, "1", 1.5, True, None])
def test_a_nonsense_schema_version_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="schema_version"):
        normalize({"schema_version": bad, "id": "x", "status": "ok"})


def test_shares_stored_by_the_first_migration_still_load_after_upgrading(db_url: str) -> None:
    """Rows written at revision 0001, then every later migration, then a read through Store."""
    store = Store(db_url)
    try:
        ensure_directory(store.engine)
        migrate.upgrade(store.engine, "0001")
        assert migrate.current_revision(store.engine) == "0001"
        with store.engine.begin() as conn:
            for i, path in enumerate(STORED):
                raw = canonical_json(json.loads(path.read_bytes()))
                conn.execute(insert(shares).values(
                    id=f"fixture{i}", content_hash=content_hash(json.loads(raw)),
                    schema_version=stored_version(json.loads(raw)), body=compress(raw), size=len(raw),
                    created_at=0.0))
        store.migrate()
        for i, path in enumerate(STORED):
            blob = store.get_share(f"fixture{i}")
            assert blob is not None
            golden = json.loads(path.with_name(path.stem + ".normalized.json").read_bytes())
            assert load(blob) == golden
    finally:
        store.close()
