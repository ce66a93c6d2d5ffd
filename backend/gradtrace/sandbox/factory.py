"""Pick the runner by ``GRADTRACE_RUNNER`` from a table (an unknown key is an error, not a default)."""

from __future__ import annotations

from collections.abc import Callable

from gradtrace.sandbox.pool import ForkServerPool
from gradtrace.sandbox.runner import Runner
from gradtrace.settings import Settings


def _queue_runner(settings: Settings) -> Runner:
    from gradtrace.queue.runner import QueueRunner  # arq is imported only when it is used

    return QueueRunner(settings)


RUNNERS: dict[str, Callable[[Settings], Runner]] = {
    "forkserver": ForkServerPool,
    "queue": _queue_runner,
}


def make_runner(settings: Settings) -> Runner:
    """The runner named by ``settings.runner``; raises ValueError for a name not in the table."""
    try:
        factory = RUNNERS[settings.runner]
    except KeyError:
        raise ValueError(f"unknown runner {settings.runner!r}; expected one of {sorted(RUNNERS)}") from None
    return factory(settings)
