"""What the routes share: settings, the store, the runner, metrics and the rate limiter.

One :class:`Services` lives on ``app.state.services``; routes reach it through the
:func:`services` dependency. The runner comes from :mod:`gradtrace.runners`, picked by
``GRADTRACE_RUNNER``; this module never runs code itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request

from gradtrace.api.compare_cache import BoundedCache
from gradtrace.api.documents import ParsedDocuments
from gradtrace.api.fairshare import FairShare, client_id
from gradtrace.api.metrics import Metrics
from gradtrace.api.ratelimit import TokenBuckets
from gradtrace.errors import NotFound, ServiceUnavailable
from gradtrace.jobs import Limits, Runner, RunnerState
from gradtrace.settings import Settings
from gradtrace.storage.codec import StoredBlob
from gradtrace.storage.store import Store


def make_default_runner(settings: Settings) -> Runner:
    """The runner ``GRADTRACE_RUNNER`` names (:func:`gradtrace.runners.make_runner`)."""
    from gradtrace.runners import make_runner  # the pool's modules load on first use

    return make_runner(settings)


def limits_from(settings: Settings) -> Limits:
    return Limits(timeout_s=settings.timeout_s, cpu_s=settings.cpu_s, memory_mb=settings.memory_mb,
                  output_bytes=settings.output_kb * 1024, result_bytes=settings.result_mb * 1024 * 1024,
                  max_nodes=settings.max_nodes, max_events=settings.max_events,
                  tensor_bytes=settings.tensor_budget_mb << 20)


@dataclass
class Services:
    settings: Settings
    store: Store
    metrics: Metrics
    buckets: TokenBuckets
    runner: Runner | None = None
    limits: Limits = field(default_factory=Limits)
    fair: FairShare | None = None
    """Turns on the workers (NOTE [fair shares] in ``fairshare.py``); made by :func:`fair_share_for`."""
    documents: ParsedDocuments = field(init=False)
    """Parsed stored documents, for compare, explain and gradcheck (NOTE [parsed documents] in
    ``api/documents.py``)."""
    compare_answers: BoundedCache[bytes] = field(init=False)
    """Comparison answers (JSON) by both documents' content hashes."""

    def __post_init__(self) -> None:
        budget = self.settings.compare_cache_mb << 20
        self.documents = ParsedDocuments(budget * 3 // 4, max_entries=64)
        self.compare_answers = BoundedCache(budget // 4, max_entries=256)

    def runner_state(self) -> RunnerState | None:
        return self.runner.state() if self.runner is not None else None

    def require_runner(self) -> Runner:
        if self.runner is None:
            raise ServiceUnavailable("no sandbox runner is configured on this server", retry_after=30.0)
        return self.runner

    def resolve_device(self, runner: Runner, requested: str) -> str:
        """``cpu`` / ``cuda`` for the job; asking for cuda without one is a 422 (the runner
        knows its devices: :meth:`Runner.resolve_device`)."""
        return runner.resolve_device(requested)

    def page_limits(self) -> dict[str, Any]:
        s = self.settings
        return {"max_code_kb": s.max_code_kb, "timeout_s": s.timeout_s, "cpu_s": s.cpu_s,
                "memory_mb": s.memory_mb, "output_kb": s.output_kb, "max_nodes": s.max_nodes,
                "max_events": s.max_events}

    @property
    def run_retention_s(self) -> float | None:
        """How long a run is kept, in seconds (``None``: forever); the purge in ``api/app.py``
        forgets older ones, and :meth:`kept_run` does not see them even before it runs."""
        days = self.settings.run_retention_days
        return days * 86400.0 if days else None

    def kept_run(self, run_id: str) -> StoredBlob | None:
        """The stored run ``run_id`` while it is kept, or None: the one retention lookup of
        ``GET /api/runs/{id}``, ``/r/{id}`` and ``POST /api/shares`` by ``run_id``."""
        return self.store.get_run(run_id, max_age_s=self.run_retention_s)

    def require_kept_run(self, run_id: str, *, instead: str = "share a run to keep it") -> StoredBlob:
        """:meth:`kept_run`, or a 404 that says how long runs are kept and what to do ``instead``."""
        blob = self.kept_run(run_id)
        if blob is None:
            days = self.settings.run_retention_days
            kept = f"runs are kept {days} days" if days else "runs are kept forever"
            raise NotFound(f"no run with id {run_id!r} ({kept}; {instead})", detail={"run_id": run_id})
        return blob

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
    """The client, for the rate limit and the fair shares (``GRADTRACE_CLIENT_HEADER``)."""
    return client_id(request, request.app.state.services.settings.client_header)


def fair_share_for(svc: Services) -> FairShare:
    """The fair shares of ``svc``'s runner: capacity is its workers as it reports them now."""
    s = svc.settings

    def capacity() -> int:
        state = svc.runner_state()
        return state.workers if state is not None and state.ready else 0

    return FairShare(per_client=s.client_jobs, queue_size=s.queue_size, retry_after_s=s.timeout_s,
                     capacity=capacity)
