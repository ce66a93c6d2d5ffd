"""The service's parsed documents (``api/documents.py``): explain, gradcheck and compare read a
stored run through one bounded cache, and an answer read from it is the answer read from the
stored bytes afresh."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from gradtrace.api.app import create_app
from gradtrace.api.services import Services
from gradtrace.lessons import lesson
from gradtrace.settings import Settings
from gradtrace.storage.codec import encode

NET = lesson("mlp_loss").code


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    from rundoc import run_doc

    return run_doc(NET, seed=0)


def _service(tmp_path: Path, doc: dict[str, Any], cache_mb: int) -> tuple[Any, Services, str]:
    """An app with ``doc`` stored as a run (no lifespan: no runner, the routes read only)."""
    app = create_app(Settings(data_dir=tmp_path, compare_cache_mb=cache_mb))
    svc: Services = app.state.services
    svc.store.migrate()
    encoded = encode(doc)
    svc.store.put_run(encoded)
    return app, svc, encoded.doc_id


def _clicks(app: Any, run_id: str, doc: dict[str, Any]) -> list[bytes]:
    """An explain of every backward event, the explanations a saved file carries, and a check of a
    node that cannot be checked (its 422 comes after the route has read the run, before any
    sandbox)."""
    async def clicks() -> list[bytes]:
        bodies = []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            for e in (e for e in doc["events"] if e["phase"] == "backward"):
                r = await client.get(f"/api/runs/{run_id}/explain", params={"node": e["node"], "pass": e["pass"]})
                assert r.status_code == 200, r.text
                bodies.append(r.content)
            r = await client.get(f"/api/runs/{run_id}/explanations")  # a saved file's bundle
            assert r.status_code == 200 and r.json()["nodes"], r.text[:300]
            bodies.append(r.content)
            add = next(n["id"] for n in doc["graph"]["nodes"] if n["name"] == "AddmmBackward0")
            r = await client.post(f"/api/runs/{run_id}/gradcheck", json={"node": add})
            assert r.status_code == 422 and "cannot be checked" in r.json()["error"]["message"], r.text
            bodies.append(r.content)
        return bodies
    return asyncio.run(clicks())


def _compare(app: Any, run_id: str) -> httpx.Response:
    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.post("/api/compare", json={"a": {"run_id": run_id}, "b": {"run_id": run_id}})
    return asyncio.run(post())


def test_explain_and_gradcheck_parse_a_run_once_and_answer_as_from_fresh_bytes(
        tmp_path: Path, stored: dict[str, Any]) -> None:
    client, svc, run_id = _service(tmp_path / "kept", stored, cache_mb=128)
    fresh, fresh_svc, fresh_id = _service(tmp_path / "fresh", stored, cache_mb=0)
    assert run_id == fresh_id
    kept = [_clicks(client, run_id, stored) for _ in range(2)]
    cache = svc.documents.cache
    assert (cache.misses, len(cache)) == (1, 1), "one parse for every click of both routes"
    assert cache.hits == 2 * len(kept[0]) - 1
    assert kept[0] == kept[1] == _clicks(fresh, fresh_id, stored), "the kept document answers as the stored bytes do"
    none = fresh_svc.documents.cache  # 0 MiB: every click parses, nothing is kept
    assert (len(none), none.misses, none.hits) == (0, len(kept[0]), 0)
    for s in (svc, fresh_svc):
        s.store.close()


def test_compare_reads_its_own_form_of_the_same_run_in_the_same_cache(tmp_path: Path,
                                                                     stored: dict[str, Any]) -> None:
    client, svc, run_id = _service(tmp_path, stored, cache_mb=128)
    _clicks(client, run_id, stored)
    r = _compare(client, run_id)
    assert r.status_code == 200 and r.json()["first_divergence"] is None, r.text
    cache = svc.documents.cache
    assert (cache.misses, len(cache)) == (2, 2), "whole and compare forms: one entry each"
    assert cache.cost <= cache.max_cost
    svc.store.close()
