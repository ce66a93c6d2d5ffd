"""Prometheus metrics of one app instance (its own registry, so tests may build several apps).

* ``gradtrace_runs_total{status}``: runs by final status (the document's, or ``rejected`` /
  ``cancelled`` / ``saturated`` for runs that produced none);
* ``gradtrace_run_duration_seconds``: wall time of runs that produced a document, queue
  included (refused, saturated and cancelled runs are not timed);
* ``gradtrace_pool_queue_depth``, ``gradtrace_pool_busy_workers``, ``gradtrace_pool_workers``:
  read from the runner at scrape time;
* with ``GRADTRACE_RUNNER=queue``, ``gradtrace_queue_depth{device}``, ``gradtrace_queue_workers{device}``
  and ``gradtrace_queue_slots{device}`` from the Redis registry (the HPA example scales on depth);
* ``gradtrace_shares_created_total``: new share rows (repeats of an existing share not counted);
* ``gradtrace_http_requests_total{method,route,status}``;
* ``gradtrace_results_validated_total{path}``: job results by validation path, ``strict`` (the
  fast path for documents as capture writes them) or ``general`` (NOTE [fast path] in
  ``schema/fast.py``), counted by the process since it started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from gradtrace.jobs import RunnerState
from gradtrace.sandbox.kinds import run as run_kind

RUN_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _PoolCollector(Collector):
    def __init__(self, state: Callable[[], RunnerState | None]) -> None:
        self._state = state

    def collect(self) -> Iterable[GaugeMetricFamily]:
        st = self._state()
        values = (st.queued, st.busy, st.workers) if st is not None else (0, 0, 0)
        yield GaugeMetricFamily("gradtrace_pool_queue_depth", "Jobs waiting for a worker.", value=values[0])
        yield GaugeMetricFamily("gradtrace_pool_busy_workers", "Workers running a job.", value=values[1])
        yield GaugeMetricFamily("gradtrace_pool_workers", "Workers in the pool.", value=values[2])
        devices = st.detail.get("devices") if st is not None else None
        if devices:  # runner=queue: per device, from the Redis registry
            depth = GaugeMetricFamily("gradtrace_queue_depth", "Jobs waiting in the queue.", labels=["device"])
            workers = GaugeMetricFamily("gradtrace_queue_workers", "Registered worker processes.",
                                        labels=["device"])
            slots = GaugeMetricFamily("gradtrace_queue_slots", "Job slots of the registered workers.",
                                      labels=["device"])
            for device, d in sorted(devices.items()):
                depth.add_metric([device], d["queued"])
                workers.add_metric([device], d["workers"])
                slots.add_metric([device], d["slots"])
            yield from (depth, workers, slots)


class _ValidationCollector(Collector):
    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily("gradtrace_results_validated",
                                     "Job results validated, by path (strict = the fast path).", labels=["path"])
        for path, count in sorted(run_kind.VALIDATED.items()):
            family.add_metric([path], count)
        yield family


class Metrics:
    """The service's metrics; ``render()`` is the body of ``GET /metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.runs = Counter("gradtrace_runs", "Runs by final status.", ["status"], registry=self.registry)
        self.run_seconds = Histogram("gradtrace_run_duration_seconds", "Wall time of a run, queue included.",
                                     buckets=RUN_BUCKETS, registry=self.registry)
        self.shares = Counter("gradtrace_shares_created", "Share links created.", registry=self.registry)
        self.requests = Counter("gradtrace_http_requests", "HTTP requests by route and status.",
                                ["method", "route", "status"], registry=self.registry)
        self.registry.register(_ValidationCollector())

    def watch_pool(self, runner_state: Callable[[], RunnerState | None]) -> None:
        """Report the pool's gauges from ``runner_state()`` at every scrape."""
        self.registry.register(_PoolCollector(runner_state))

    def render(self) -> bytes:
        return generate_latest(self.registry)
