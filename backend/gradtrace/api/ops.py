"""Operations endpoints: ``/healthz`` (liveness), ``/readyz`` (database + pool), ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from gradtrace.api.services import Services, ServicesDep
from gradtrace.errors import StorageUnavailable
from gradtrace.version import __version__

router = APIRouter(tags=["operations"])


def _runner_json(svc: Services) -> dict[str, Any]:
    st = svc.runner_state()
    if st is None:
        return {"kind": None, "ready": False, "workers": 0, "busy": 0, "queued": 0,
                "queue_capacity": 0, "cuda_available": False, "isolation": {}, "torch_version": None,
                "capture_core": None}
    # The isolation layers are public on purpose: a user deciding what to send can see which
    # are active ("active: ...") and which are off, with the reason.
    return {"kind": st.kind, "ready": st.ready, "workers": st.workers, "busy": st.busy,
            "queued": st.queued, "queue_capacity": st.queue_capacity, "cuda_available": st.cuda_available,
            "isolation": st.detail.get("layers", {}), "torch_version": st.detail.get("torch_version"),
            "capture_core": st.detail.get("capture_core"), **_queue_json(st.detail)}


def _queue_json(detail: dict[str, Any]) -> dict[str, Any]:
    """With runner=queue: depth and registered workers per device, Redis, and each worker."""
    if "devices" not in detail:
        return {}
    return {"queue": {"devices": detail["devices"], "redis": detail.get("redis"),
                      "registered": detail.get("workers", [])}}


@router.get("/healthz", summary="Liveness, with the worker pool's state")
async def healthz(svc: ServicesDep) -> dict[str, Any]:
    runner = _runner_json(svc)
    return {"status": "ok", "version": __version__, "runner": runner, **{
        k: runner[k] for k in ("workers", "busy", "queued", "cuda_available") if k in runner}}


@router.get("/readyz", summary="Readiness: the database answers and the pool is up",
            responses={503: {"description": "Not ready (see checks)"}})
async def readyz(svc: ServicesDep) -> Response:
    checks: dict[str, Any] = {}
    try:
        await run_in_threadpool(svc.store.ping)
        checks["database"] = {"ok": True}
    except StorageUnavailable as exc:
        checks["database"] = {"ok": False, "message": exc.message}
    runner = _runner_json(svc)
    checks["runner"] = {"ok": bool(runner["ready"]), **runner}
    ready = all(c["ok"] for c in checks.values())
    body = {"status": "ready" if ready else "not_ready", "checks": checks}
    if ready:
        return JSONResponse(body)
    failing = ", ".join(name for name, c in checks.items() if not c["ok"])
    return JSONResponse({"error": {"code": "not_ready", "message": f"not ready: {failing}", "detail": body}},
                        status_code=503, headers={"Retry-After": "1"})


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(svc: ServicesDep) -> Response:
    return Response(svc.metrics.render(), media_type=CONTENT_TYPE_LATEST)
