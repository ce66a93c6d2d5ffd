"""The runner seam: one small interface in front of whatever executes snippets.

The API only ever calls :meth:`Runner.run`. Today the implementation is the local fork-server
pool (:mod:`gradtrace.sandbox.pool`); a later queue-backed fleet of worker machines plugs in
behind the same call, picked by ``GRADTRACE_RUNNER``. The in-process runner used by capture's
unit tests lives in ``tests/`` helpers, never here: the service never runs user code in the
web process.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Limits:
    """Per-run limits, copied from :class:`gradtrace.settings.Settings`."""

    timeout_s: float = 5.0
    cpu_s: int = 5
    memory_mb: int = 1024
    output_bytes: int = 64 * 1024
    result_bytes: int = 32 * 1024 * 1024
    max_nodes: int = 50_000
    max_events: int = 200_000


@dataclass(frozen=True)
class Job:
    """One snippet to run. ``device`` is already resolved to ``cpu`` or ``cuda``."""

    code: str
    device: str = "cpu"
    seed: int | None = 0
    limits: Limits = field(default_factory=Limits)


@dataclass
class RunnerState:
    """What ``/healthz`` and ``/readyz`` report about the runner."""

    kind: str
    ready: bool
    workers: int
    busy: int
    queued: int
    queue_capacity: int
    cuda_available: bool
    detail: dict[str, Any] = field(default_factory=dict)


class Runner(abc.ABC):
    """Executes jobs in isolation and answers with validated run documents (as dicts)."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Bring the workers up; called once when the service starts."""

    @abc.abstractmethod
    async def run(self, job: Job) -> dict[str, Any]:
        """Run one job and return its run document.

        Raises :class:`gradtrace.errors.PoolSaturated` at once when the queue is full. If the
        awaiting task is cancelled (the client went away), the job is killed before this
        returns.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop every worker; no process may survive this."""

    @abc.abstractmethod
    def state(self) -> RunnerState:
        """A cheap snapshot of the pool for health checks and metrics."""

    @abc.abstractmethod
    def resolve_device(self, requested: str) -> str:
        """``cpu`` or ``cuda`` for a job that asked for ``auto``, ``cpu`` or ``cuda``; raises
        :class:`gradtrace.errors.DeviceUnavailable` for a device this runner cannot give."""
