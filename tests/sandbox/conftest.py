"""Fixtures for the pool tests: one real pool per module, with short limits so slow cases stay fast."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

from sandbox.pool_harness import PoolHarness


@pytest.fixture(scope="module")
def pool(request: pytest.FixtureRequest) -> Iterator[PoolHarness]:
    """A pool started while the test process holds a secret the jobs must never see."""
    os.environ["GRADTRACE_TEST_SECRET"] = secrets.token_hex(16)
    # A module that runs torch.compile snippets sets WARM_COMPILE = True (it costs ~6 s per start).
    # A module whose programs are real training loops sets POOL_LIMITS: a job may lower the
    # pool's CPU limit but never raise it (``_tighten_limits`` in sandbox/child.py).
    limits = {"timeout_s": 3.0, "cpu_s": 2, **getattr(request.module, "POOL_LIMITS", {})}
    harness = PoolHarness(warm_compile=getattr(request.module, "WARM_COMPILE", False), workers=2,
                          queue_size=4, memory_mb=512, output_kb=16, **limits)
    try:
        yield harness
    finally:
        harness.close()
