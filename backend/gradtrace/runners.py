"""Pick the runner by ``GRADTRACE_RUNNER`` from a table (an unknown key is an error, not a default).

This module sits above both runners (the sandbox's local pool and the queue), so neither
imports the other to be chosen; the API imports only this and :mod:`gradtrace.jobs`.
"""

from __future__ import annotations

from collections.abc import Callable

from gradtrace.jobs import Runner
from gradtrace.settings import Settings


def _forkserver(settings: Settings) -> Runner:
    from gradtrace.sandbox.pool import ForkServerPool  # the pool's modules load on first use

    return ForkServerPool(settings)


def _queue(settings: Settings) -> Runner:
    from gradtrace.queue.runner import QueueRunner  # arq is imported only when it is used

    return QueueRunner(settings)


RUNNERS: dict[str, Callable[[Settings], Runner]] = {
    "forkserver": _forkserver,
    "queue": _queue,
}


def make_runner(settings: Settings) -> Runner:
    """The runner named by ``settings.runner``; raises ValueError for a name not in the table."""
    try:
        factory = RUNNERS[settings.runner]
    except KeyError:
        raise ValueError(f"unknown runner {settings.runner!r}; expected one of {sorted(RUNNERS)}") from None
    return factory(settings)
