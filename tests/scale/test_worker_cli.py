"""``gradtrace worker`` refuses what it cannot do, with a sentence and a non-zero status."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scale.fleet import worker_env


def _worker(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradtrace.cli", "worker", *args], env=worker_env(env),
                          capture_output=True, text=True, timeout=120)


def test_without_a_redis_url_the_worker_says_so() -> None:
    r = _worker(env={})
    assert r.returncode == 2 and "GRADTRACE_REDIS_URL" in r.stderr


def test_concurrency_out_of_range_is_refused() -> None:
    r = _worker("--concurrency", "65", env={"GRADTRACE_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert r.returncode == 2 and "--concurrency" in r.stderr


def test_a_cuda_worker_on_a_machine_without_cuda_refuses_to_start() -> None:
    if os.path.exists("/dev/nvidiactl"):
        pytest.skip("this machine has an NVIDIA device: a CUDA worker would start here")
    r = _worker("--device", "cuda", "--concurrency", "1", "--no-warm-compile",
                env={"GRADTRACE_REDIS_URL": "redis://127.0.0.1:1/0", "GRADTRACE_SANDBOX": "false"})
    assert r.returncode != 0 and "no CUDA device" in r.stderr, r.stderr[-2000:]
