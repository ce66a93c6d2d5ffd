"""The hostile suite's fixtures: one real pool with short limits, bait, and the after-run checks.

The bait is what an escaped snippet would go for: a secret in the test process's environment,
a secret file in the service's data directory, a world-writable canary directory (so only the
read-only mounts and Landlock stand between a job and it, not file permissions), the service's
own source, and a TCP listener on loopback that counts connections.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gradtrace.sandbox.zygote_client as source_module
from sandbox.pool_harness import LoopbackListener, PoolHarness, children_of, snapshot
from security.bait import Bait


@pytest.fixture(scope="session")
def bait() -> Iterator[Bait]:
    secret = "gt-secret-" + secrets.token_hex(12)
    os.environ["GRADTRACE_TEST_SECRET"] = secret
    data_dir = Path(tempfile.mkdtemp(prefix="gradtrace-sec-data-"))
    secret_file = data_dir / "gradtrace.db"
    secret_file.write_text("db-secret-" + secrets.token_hex(12))
    canary_dir = Path(tempfile.mkdtemp(prefix="gradtrace-canary-", dir="/var/tmp"))
    canary_dir.chmod(0o777)
    canary_file = canary_dir / "canary.txt"
    canary_file.write_text("untouched\n")
    canary_file.chmod(0o666)
    source_file = Path(source_module.__file__)
    listener = LoopbackListener()
    try:
        yield Bait(secret, data_dir, secret_file, canary_dir, canary_file, source_file,
                   "NOTE [who kills and who reaps]", listener)
    finally:
        listener.close()
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(canary_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def hostile_pool(bait: Bait) -> Iterator[PoolHarness]:
    harness = PoolHarness(workers=2, queue_size=8, timeout_s=2.0, cpu_s=1, memory_mb=384, output_kb=16,
                          max_nodes=1_000, max_events=4_000, data_dir=str(bait.data_dir))
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(scope="session")
def ordinary_grad() -> list[float]:
    """The leaf gradient of ORDINARY, computed by torch itself (the oracle)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # numpy is not installed
        import torch
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x ** 2).sum().backward()
    assert x.grad is not None
    return [float(v) for v in x.grad.tolist()]


@pytest.fixture()
def watched(bait: Bait, hostile_pool: PoolHarness) -> Iterator[dict[str, Any]]:
    """State before a hostile run, for the checks after it."""
    zygote = hostile_pool.pool.state().detail["zygote_pid"]
    yield {"files": snapshot([bait.canary_dir, bait.data_dir]), "zygote": zygote,
           "idle": set(children_of(zygote)), "connections": bait.listener.connections}
