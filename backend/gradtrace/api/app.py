"""The app factory: ``uvicorn --factory gradtrace.api.app:create_app``.

:func:`create_app` wires settings, storage, the runner, metrics, middleware, error handlers and
routes. Nothing heavy happens at import or construction time; the lifespan migrates the
database, starts the runner, and at shutdown stops the runner (no worker survives) and
closes the database. A background task forgets runs older than ``run_retention_days``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.middleware.cors import CORSMiddleware

from gradtrace.api import (
    compare,
    compare_page,
    docs,
    errors,
    explain,
    gradcheck,
    lessons,
    ops,
    pages,
    runs,
    shares,
    tensor_keys,
    tensors,
)
from gradtrace.api.metrics import Metrics
from gradtrace.api.middleware import RequestContextMiddleware
from gradtrace.api.ratelimit import TokenBuckets
from gradtrace.api.security import SecurityHeadersMiddleware
from gradtrace.api.services import Services, fair_share_for, limits_from, make_default_runner
from gradtrace.jobs import Runner
from gradtrace.settings import Settings, get_settings
from gradtrace.storage.store import Store
from gradtrace.version import __version__

log = logging.getLogger("gradtrace.api")
PURGE_EVERY_S = 3600.0


def create_app(settings: Settings | None = None, *, runner: Runner | None = None) -> FastAPI:
    """Build the service. ``runner`` overrides the one ``GRADTRACE_RUNNER`` picks."""
    settings = settings or get_settings()
    _configure_logging(settings.log_level)
    store = Store(settings.effective_database_url)
    svc = Services(settings=settings, store=store, metrics=Metrics(),
                   buckets=TokenBuckets(settings.rate_per_minute, settings.rate_burst),
                   runner=None, limits=limits_from(settings))
    svc.metrics.watch_pool(svc.runner_state)
    svc.fair = fair_share_for(svc)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(store.migrate)
        svc.runner = runner if runner is not None else make_default_runner(settings)
        if svc.runner is not None:
            await svc.runner.start()
        purge = asyncio.create_task(_purge_runs_forever(svc))
        try:
            yield
        finally:
            purge.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await purge
            if svc.runner is not None:
                await svc.runner.close()
            store.close()

    app = FastAPI(title="gradtrace", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  summary="Record PyTorch's dynamic autograd graph, share it, watch it run.")
    app.state.services = svc
    errors.install(app)
    for module in (runs, gradcheck, explain, tensors, tensor_keys, shares, compare, compare_page, lessons, ops, pages):
        app.include_router(module.router)
    pages.mount_static(app)
    docs.install(app)  # /docs with Swagger UI from a package, not a CDN
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["*"],
                           expose_headers=["X-Request-ID", "Retry-After", "ETag", "Content-Range",
                                           "Accept-Ranges", "Content-Length", "X-Tensor-Dtype", "X-Tensor-Shape"])
    app.add_middleware(RequestContextMiddleware, max_body_bytes=settings.max_body_mb * 1024 * 1024,
                       metrics=svc.metrics)
    # Outermost: every answer, the inner middlewares' refusals included (NOTE [security headers]).
    app.add_middleware(SecurityHeadersMiddleware, frame_ancestors=settings.frame_ancestors)
    return app


async def _purge_runs_forever(svc: Services) -> None:
    keep_s = svc.run_retention_s  # the window Services.kept_run reads within
    if keep_s is None:
        return
    while True:
        try:
            gone = await run_in_threadpool(svc.store.purge_runs, older_than_s=keep_s)
            if gone:
                log.info("forgot %d runs older than %d days", gone, svc.settings.run_retention_days)
        except Exception:  # the next round retries; a failing database shows in /readyz
            log.exception("purging old runs failed")
        await asyncio.sleep(PURGE_EVERY_S)


def _configure_logging(level: str) -> None:
    """The service's own loggers write their lines to stderr as they are (access lines are JSON).

    Only ``gradtrace.access`` and ``gradtrace.api`` are configured, so the other parts'
    loggers keep propagating to whatever the host process set up.
    """
    resolved = level.upper() if level.upper() in logging.getLevelNamesMapping() else "INFO"
    for name in ("gradtrace.access", "gradtrace.api"):
        logger = logging.getLogger(name)
        logger.setLevel(resolved)
        if not any(getattr(h, "_gradtrace", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            handler._gradtrace = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
            logger.propagate = False
