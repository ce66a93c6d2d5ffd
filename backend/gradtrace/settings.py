"""One place that reads configuration: every setting is ``GRADTRACE_<NAME>`` in the environment.

The defaults are the embedded set-up that ``make run`` starts: SQLite under ``./data`` and the
local fork-server worker pool on this machine. The README's table of variables is generated
from this class's field docs (``gradtrace settings``), so the two cannot drift.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_FRAME_SOURCE = re.compile(r"^(?:'self'|'none'|[a-z][a-z0-9+.-]*:|(?:[a-z][a-z0-9+.-]*://)?"
                           r"(?:\*\.)?[A-Za-z0-9.-]+(?::(?:\d{1,5}|\*))?(?:/[A-Za-z0-9._~/-]*)?)$")


class Settings(BaseSettings):
    """All of gradtrace's settings, with their defaults."""

    model_config = SettingsConfigDict(env_prefix="GRADTRACE_", extra="ignore")

    env: Literal["development", "production"] = Field(
        "development", description="production refuses unsafe defaults (open CORS, no sandbox).")
    host: str = Field("127.0.0.1", description="Address `gradtrace serve` binds to.")
    port: int = Field(8000, ge=1, le=65535, description="Port `gradtrace serve` listens on.")
    public_url: str | None = Field(
        None, description="Base URL used in share links; default: the URL of the request.")
    data_dir: Path = Field(Path("./data"), description="Where the SQLite database lives.")
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL; default sqlite under data_dir. postgresql+psycopg://… for PostgreSQL.")
    run_retention_days: int = Field(
        30, ge=0, description="Days a run stays retrievable by id (0 = forever). Shares are kept forever.")

    runner: Literal["forkserver", "queue"] = Field(
        "forkserver", description="forkserver: a worker pool inside this process (one machine); "
        "queue: jobs go through Redis to `gradtrace worker` processes on any machine.")
    redis_url: str | None = Field(
        None, description="Redis URL of the job queue (redis://host:6379/0); needed by runner=queue and "
        "`gradtrace worker`.")
    queue_wait_s: float = Field(
        10.0, gt=0, le=600, description="runner=queue: a run no worker started within this many seconds "
        "is dropped (503), never run late.")
    worker_drain_s: float = Field(
        30.0, ge=0, le=3600, description="`gradtrace worker` on SIGTERM/SIGINT stops taking jobs and lets "
        "the running ones finish for up to this many seconds (keep it above GRADTRACE_TIMEOUT_S, and the "
        "container's stop grace period above it); runs still going then end as crashed. A second signal "
        "ends the drain at once.")
    userns: bool = Field(
        True, description="A non-root `gradtrace worker` enters an unprivileged user namespace (with a "
        "subordinate uid range from /etc/subuid) so the root-only sandbox layers stay on.")
    cgroup_parent: str | None = Field(
        None, description="A cgroup delegated to a non-root worker (a directory name under each cgroup "
        "v1 hierarchy, or under the v2 root, owned by the worker's user).")
    workers: int = Field(
        default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=64,
        description="Concurrent sandboxed jobs (default: one per core).")
    queue_size: int = Field(
        16, ge=0, le=10_000, description="Jobs that may wait for a worker before the API answers 503.")
    sandbox: bool = Field(
        True, description="Apply the kernel isolation layers to each job (namespaces, seccomp, uid, rlimits).")

    timeout_s: float = Field(5.0, gt=0, le=600, description="Wall-clock limit of one run, seconds.")
    cpu_s: int = Field(5, ge=1, le=600, description="CPU-time limit of one run, seconds.")
    memory_mb: int = Field(1024, ge=64, description="Memory a run may use beyond the worker's baseline, MiB.")
    output_kb: int = Field(64, ge=1, description="Cap on what a snippet prints, KiB.")
    result_mb: int = Field(32, ge=1, description="Cap on a run document's JSON size, MiB.")
    tensor_budget_mb: int = Field(256, ge=0, description="Byte budget of a run's tensor file (every "
                                  "node's value and every gradient, docs/CONTRACT.md), MiB; past it "
                                  "the most important tensors are kept first.")
    max_code_kb: int = Field(64, ge=1, description="Largest snippet accepted (413 beyond).")
    max_body_mb: int = Field(16, ge=1, description="Largest request body accepted (413 beyond).")
    max_nodes: int = Field(50_000, ge=10, description="Graph nodes recorded before a run ends with graph_limit.")
    max_events: int = Field(200_000, ge=10, description="Events recorded before a run ends with graph_limit.")
    compare_cache_mb: int = Field(
        128, ge=0, description="Memory for the service's caches, MiB: three quarters for parsed stored "
        "documents, which compare, explain and gradcheck read (counted at 5x their JSON; NOTE [parsed "
        "documents] in api/documents.py), a quarter for comparison answers (NOTE [comparison caches] in "
        "api/compare_cache.py); 0 = no cache.")

    client_jobs: int | None = Field(
        None, ge=0, le=64, description="Jobs one client may run at once; more wait their turn in a fair "
        "(round-robin) queue, and beyond as many again it gets 429 with Retry-After. Default: half the "
        "workers (with runner=queue: of the registered slots), rounded up; 0 = fair shares off (jobs go "
        "straight to the runner's own queue).")
    client_header: str | None = Field(
        None, description="Request header that names the client for the rate limit and the fair shares "
        "(e.g. X-API-Key); default: the client's address.")
    rate_per_minute: float = Field(120.0, ge=0, description="Runs per minute per client (token bucket; 0 = no limit).")
    rate_burst: int = Field(30, ge=1, description="Burst size of the per-client token bucket.")
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (JSON list).")
    frame_ancestors: str = Field(
        "'self'", description="Who may show the pages in a frame: the CSP `frame-ancestors` source list, "
        "e.g. `'self' https://blog.example` for a site that embeds the viewer; `'none'` for nobody.")
    health_details: bool = Field(
        False, description="`/healthz` and `/readyz` also list the sandbox layers, torch and capture core "
        "versions and the queue's workers (for operators; off: only what a load balancer needs).")
    log_level: str = Field("info", description="Python logging level.")

    @property
    def effective_database_url(self) -> str:
        """The configured database URL, or SQLite inside ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'gradtrace.db').resolve()}"

    @field_validator("frame_ancestors")
    @classmethod
    def _one_source_list(cls, value: str) -> str:
        sources = value.split()
        if not sources or any(not _FRAME_SOURCE.match(s) for s in sources):
            raise ValueError(f"not a CSP source list: {value!r} (e.g. \"'self' https://blog.example\")")
        if "'none'" in sources and len(sources) > 1:
            raise ValueError("'none' cannot be combined with other sources")
        return " ".join(sources)

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Settings:
        if self.env == "production":
            if not self.sandbox:
                raise ValueError("GRADTRACE_SANDBOX=false is refused when GRADTRACE_ENV=production")
            if "*" in self.cors_origins:
                raise ValueError("GRADTRACE_CORS_ORIGINS='[\"*\"]' is refused when GRADTRACE_ENV=production")
        return self


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
