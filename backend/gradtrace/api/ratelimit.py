"""Per-client token buckets: ``rate_per_minute`` refill, ``rate_burst`` capacity.

A request that finds its bucket empty is refused with 429 and a ``Retry-After`` that says
when the next token will be there. Buckets are kept in memory per process (one service
process per machine is the deployment); idle buckets that have refilled are forgotten, so the
table cannot grow without bound under a scan of many addresses.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from gradtrace.errors import RateLimited

MAX_BUCKETS = 50_000


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class TokenBuckets:
    """A token bucket per key (the client's address)."""

    def __init__(self, rate_per_minute: float, burst: int) -> None:
        self.rate_per_s = rate_per_minute / 60.0
        self.burst = float(burst)
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate_per_s > 0

    def take(self, key: str, *, now: float | None = None) -> None:
        """Spend one token of ``key``'s bucket or raise RateLimited."""
        if not self.enabled:
            return
        t = time.monotonic() if now is None else now
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._forget_full(t)
                bucket = self._buckets[key] = _Bucket(self.burst, t)
            bucket.tokens = min(self.burst, bucket.tokens + (t - bucket.stamp) * self.rate_per_s)
            bucket.stamp = t
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            wait = (1.0 - bucket.tokens) / self.rate_per_s
        raise RateLimited(
            f"too many requests from {key}: the limit is {self.rate_per_s * 60:g} per minute "
            f"with bursts of {int(self.burst)}; retry in {math.ceil(wait)} s",
            retry_after=wait, detail={"rate_per_minute": self.rate_per_s * 60, "burst": int(self.burst)})

    def _forget_full(self, now: float) -> None:
        full = [k for k, b in self._buckets.items()
                if b.tokens + (now - b.stamp) * self.rate_per_s >= self.burst]
        for k in full:
            del self._buckets[k]
        if len(self._buckets) >= MAX_BUCKETS:  # all busy: drop the oldest half
            for k, _ in sorted(self._buckets.items(), key=lambda kv: kv[1].stamp)[: MAX_BUCKETS // 2]:
                del self._buckets[k]
