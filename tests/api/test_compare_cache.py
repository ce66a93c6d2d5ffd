"""The comparison caches (``api/compare_cache.py``): bounded, keyed by content, made once at a
time; and through the real service, a kept answer is the answer of its own two runs only."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from gradtrace.api.compare_cache import BoundedCache

NET = """import torch
from torch import nn
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
x = torch.randn(2, 3)
net(x).sum().backward()
"""


def test_the_cache_never_holds_more_than_its_cost_or_its_entries() -> None:
    cache: BoundedCache[bytes] = BoundedCache(max_cost=100, max_entries=3)
    for k in range(50):
        assert cache.get_or_make(k, lambda k=k: (bytes([k % 256]) * 30, 30)) == bytes([k % 256]) * 30
        assert cache.cost <= 100 and len(cache) <= 3
    assert len(cache) == 3 and cache.cost == 90
    assert 49 in cache and 48 in cache and 47 in cache and 46 not in cache  # least recently used went first
    # an entry larger than the whole budget is made and answered, never kept
    assert cache.get_or_make("big", lambda: (b"x" * 500, 500)) == b"x" * 500
    assert "big" not in cache and cache.cost == 90


def test_a_used_entry_is_kept_over_older_ones() -> None:
    cache: BoundedCache[str] = BoundedCache(max_cost=10, max_entries=2)
    cache.get_or_make("a", lambda: ("A", 1))
    cache.get_or_make("b", lambda: ("B", 1))
    cache.get_or_make("a", lambda: pytest.fail("kept: not made again"))  # type: ignore[no-any-return]
    cache.get_or_make("c", lambda: ("C", 1))
    assert "a" in cache and "b" not in cache and "c" in cache
    assert (cache.hits, cache.misses) == (1, 3)


def test_each_key_has_its_own_value_and_none_is_never_kept() -> None:
    cache: BoundedCache[str] = BoundedCache(max_cost=1000)
    for key in ("x", "y", ("x", "y"), ("y", "x")):
        cache.get_or_make(key, lambda key=key: (repr(key), 1))
    for key in ("x", "y", ("x", "y"), ("y", "x")):
        assert cache.get_or_make(key, lambda: ("wrong", 1)) == repr(key)
    made = []
    for _ in range(3):
        cache.get_or_make(None, lambda: (made.append(1) or "fresh", 1))  # type: ignore[func-returns-value]
    assert len(made) == 3 and None not in cache


def test_a_key_is_made_once_while_others_wait_and_a_failure_is_not_kept() -> None:
    cache: BoundedCache[int] = BoundedCache(max_cost=1000)
    started, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> tuple[int, int]:
        calls.append(1)
        started.set()
        assert release.wait(10)
        return 42, 1

    answers: list[int] = []
    first = threading.Thread(target=lambda: answers.append(cache.get_or_make("k", slow)))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=lambda: answers.append(cache.get_or_make("k", slow))) for _ in range(4)]
    for t in others:
        t.start()
    release.set()
    for t in (first, *others):
        t.join(10)
    assert answers == [42] * 5 and len(calls) == 1

    def broken() -> tuple[int, int]:
        raise ValueError("bad document")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad document"):
            cache.get_or_make("bad", broken)
    assert "bad" not in cache


def test_a_budget_of_zero_keeps_nothing() -> None:
    cache: BoundedCache[int] = BoundedCache(max_cost=0)
    assert cache.get_or_make("k", lambda: (1, 0)) == 1
    assert cache.get_or_make("k", lambda: (2, 0)) == 2


def test_kept_answers_belong_to_their_own_runs(api: httpx.Client) -> None:
    """Three runs compared in every order, twice (the second time from the cache): each answer
    names its own runs and seeds, and is the same the second time."""
    runs = [api.post("/api/runs", json={"code": NET, "seed": s}).json() for s in (0, 1, 2)]
    first: dict[tuple[str, str], dict] = {}
    for _ in range(2):
        for a in runs:
            for b in runs:
                r = api.post("/api/compare", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}})
                assert r.status_code == 200, r.text[:300]
                c = r.json()
                assert (c["a"]["id"], c["b"]["id"]) == (a["id"], b["id"])
                assert (c["a"]["seed"], c["b"]["seed"]) == (a["seed"], b["seed"])
                assert (c["first_divergence"] is None) == (a["id"] == b["id"])
                assert first.setdefault((a["id"], b["id"]), c) == c
    # a document given whole is never taken for a stored one with another id
    other = dict(runs[1], seed=7)
    c = api.post("/api/compare", json={"a": {"run_id": runs[0]["id"]}, "b": {"document": other}}).json()
    assert c["b"]["seed"] == 7


def test_the_page_request_starts_the_comparison_its_page_then_asks_for(tmp_path: Path) -> None:
    """NOTE [comparison started with the page]: the page's own request finds the answer made."""
    from gradtrace.api.app import create_app
    from gradtrace.api.compare import compare_answer
    from gradtrace.api.compare_page import _context, _start_comparison
    from gradtrace.api.services import Services
    from gradtrace.schema.compare import CompareSide
    from gradtrace.settings import Settings
    from gradtrace.storage.codec import encode
    from rundoc import run_doc

    app = create_app(Settings(data_dir=tmp_path))
    svc: Services = app.state.services
    svc.store.migrate()
    docs = [encode(run_doc(NET, seed=s)) for s in (0, 1)]
    for doc in docs:
        svc.store.put_run(doc)
    a, b = (doc.doc_id for doc in docs)
    context = _context(svc, a, b)
    assert (context["a_url"], context["b_url"]) == (f"/api/runs/{a}", f"/api/runs/{b}")
    _start_comparison(svc, a, b)
    key = (docs[0].content_hash, docs[1].content_hash)
    deadline = time.monotonic() + 60
    while key not in svc.compare_answers:
        assert time.monotonic() < deadline, "the comparison started with the page was never made"
        time.sleep(0.01)
    hits = svc.compare_answers.hits
    answer = orjson.loads(compare_answer(svc, CompareSide(share_id=a), CompareSide(share_id=b)))
    assert svc.compare_answers.hits == hits + 1
    assert (answer["a"]["id"], answer["b"]["id"]) == (a, b)
    # an unknown id starts nothing and breaks nothing: the page's own request says what is wrong
    _start_comparison(svc, a, "0000dead")
    svc.store.close()
