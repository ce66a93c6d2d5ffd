"""The token buckets behind the 429s, with an explicit clock."""

from __future__ import annotations

import pytest

from gradtrace.api.ratelimit import MAX_BUCKETS, TokenBuckets
from gradtrace.errors import RateLimited


def test_a_burst_is_allowed_then_one_token_per_interval() -> None:
    buckets = TokenBuckets(rate_per_minute=60, burst=3)
    for _ in range(3):
        buckets.take("a", now=0.0)
    with pytest.raises(RateLimited) as info:
        buckets.take("a", now=0.0)
    assert info.value.retry_after == pytest.approx(1.0)
    with pytest.raises(RateLimited) as later:
        buckets.take("a", now=0.75)
    assert later.value.retry_after == pytest.approx(0.25)
    buckets.take("a", now=1.0)


def test_buckets_are_per_client_and_refill_up_to_the_burst_only() -> None:
    buckets = TokenBuckets(rate_per_minute=60, burst=2)
    buckets.take("a", now=0.0)
    buckets.take("a", now=0.0)
    buckets.take("b", now=0.0)
    buckets.take("a", now=1000.0)
    buckets.take("a", now=1000.0)
    with pytest.raises(RateLimited):
        buckets.take("a", now=1000.0)


def test_a_zero_rate_means_no_limit() -> None:
    limited = TokenBuckets(rate_per_minute=1, burst=1)
    limited.take("a", now=0.0)
    with pytest.raises(RateLimited):  # what a rate of 1 does to the same two requests
        limited.take("a", now=0.0)
    buckets = TokenBuckets(rate_per_minute=0, burst=1)
    assert not buckets.enabled
    taken = 0
    for _ in range(100):
        buckets.take("a", now=0.0)  # raises RateLimited if limited
        taken += 1
    assert taken == 100
    assert buckets._buckets == {}, "no bucket is kept when nothing is limited"


def test_the_table_of_buckets_stays_bounded_under_a_scan_of_addresses() -> None:
    buckets = TokenBuckets(rate_per_minute=60, burst=2)
    for i in range(MAX_BUCKETS + 10):
        buckets.take(f"10.0.{i // 256}.{i % 256}", now=float(i) / 1000)
    assert len(buckets._buckets) <= MAX_BUCKETS
