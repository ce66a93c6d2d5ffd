"""What the routes share: settings, the store, the runner, metrics and the rate limiter.

One :class:`Services` lives on ``app.state.services``; routes reach it through the
:func:`services` dependency. The runner comes from the sandbox package's factory, picked by
``GRADTRACE_RUNNER`` (NOTE [runner discovery]); this module never runs code itself.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request

from gradtrace.api.metrics import Metrics
from gradtrace.api.ratelimit import TokenBuckets
from gradtrace.errors import DeviceUnavailable, ServiceUnavailable
from gradtrace.sandbox.runner import Limits, Runner, RunnerState
from gradtrace.settings import Settings
from gradtrace.storage.store import Store

log = logging.getLogger("gradtrace.api")

# NOTE [runner discovery]
#   The sandbox package exposes ``make_runner(settings) -> Runner``; where it lives is the
#   sandbox's business, so the service looks in these modules in order. A module that exists
#   but fails to import is a bug and is not swallowed.
RUNNER_FACTORY_MODULES = ("gradtrace.sandbox.factory", "gradtrace.sandbox.runner", "gradtrace.sandbox.pool")


def make_default_runner(settings: Settings) -> Runner | None:
    for name in RUNNER_FACTORY_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        factory = getattr(importlib.import_module(name), "make_runner", None)
        if factory is not None:
            runner = factory(settings)
            assert isinstance(runner, Runner), f"{name}.make_runner returned {type(runner)!r}"
            return runner
    log.warning("no runner factory found in %s: POST /api/runs will answer 503",
                ", ".join(RUNNER_FACTORY_MODULES))
    return None


def limits_from(settings: Settings) -> Limits:
    return Limits(timeout_s=settings.timeout_s, cpu_s=settings.cpu_s, memory_mb=settings.memory_mb,
                  output_bytes=settings.output_kb * 1024, result_bytes=settings.result_mb * 1024 * 1024,
                  max_nodes=settings.max_nodes, max_events=settings.max_events)


@dataclass
class Services:
    settings: Settings
    store: Store
    metrics: Metrics
    buckets: TokenBuckets
    runner: Runner | None = None
    limits: Limits = field(default_factory=Limits)

    def runner_state(self) -> RunnerState | None:
        return self.runner.state() if self.runner is not None else None

    def require_runner(self) -> Runner:
        if self.runner is None:
            raise ServiceUnavailable("no sandbox runner is configured on this server", retry_after=30.0)
        return self.runner

    def resolve_device(self, runner: Runner, requested: str) -> str:
        """``cpu`` / ``cuda`` for the job; asking for cuda without one is a 422."""
        resolve = getattr(runner, "resolve_device", None)
        if resolve is not None:
            return str(resolve(requested))
        cuda = runner.state().cuda_available
        if requested == "auto":
            return "cuda" if cuda else "cpu"
        if requested == "cuda" and not cuda:
            raise DeviceUnavailable("device 'cuda' was requested but this server has no CUDA device; "
                                    "use 'cpu' or 'auto'")
        return requested

    def page_limits(self) -> dict[str, Any]:
        s = self.settings
        return {"max_code_kb": s.max_code_kb, "timeout_s": s.timeout_s, "cpu_s": s.cpu_s,
                "memory_mb": s.memory_mb, "output_kb": s.output_kb, "max_nodes": s.max_nodes,
                "max_events": s.max_events}

    def public_base(self, request: Request) -> str:
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        return str(request.base_url).rstrip("/")


async def services(request: Request) -> Services:
    """FastAPI dependency: the app's services (async: a sync dependency costs a thread hop)."""
    svc = request.app.state.services
    assert isinstance(svc, Services)
    return svc


ServicesDep = Annotated[Services, Depends(services)]


CODE_HASH_LENGTH = 16
"""Hex digits of a snippet's hash in the access log: enough to group runs, too few to search."""


def code_hash(code: str) -> str:
    """What the logs may say about a snippet: a prefix of its hash."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:CODE_HASH_LENGTH]


def client_key(request: Request) -> str:
    return request.client.host if request.client else "unknown"
